#include "keel/serve/server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>

#include "keel/core/bytes.hpp"
#include "keel/core/input_file.hpp"
#include "keel/serve/model_repository.hpp"
#include "keel/serve/thread_budget.hpp"

namespace keel::serve {
namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

std::uint64_t micros_since(clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
}

std::uint64_t unix_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

void add(model_statistics& a, const model_statistics& b) {
  a.success += b.success;
  a.failure += b.failure;
  a.inference_count += b.inference_count;
  a.execution_count += b.execution_count;
  a.queue_us += b.queue_us;
  a.compute_us += b.compute_us;
  a.request_us += b.request_us;
  a.pending += b.pending;
}

// One served version. The fields are guarded by the server's mutex; load_mutex serializes
// its (re)loads.
struct version_entry {
  std::int64_t version = 0;
  fs::path file;
  std::unique_ptr<model_scheduler> scheduler;  // null: not resident (or an ensemble)
  bool loading = false;
  std::uint64_t resident_bytes = 0;  // as measured at the last load
  std::uint64_t loads = 0, load_us = 0, evictions = 0, last_inference_ms = 0;
  std::uint64_t in_flight = 0;  // requests accepted and not yet answered
  clock::time_point last_used{};
  model_statistics retired;  // of evicted schedulers, and an ensemble's own counts
  std::mutex load_mutex;
};
using version_ptr = std::shared_ptr<version_entry>;

struct model_entry {
  std::string name;
  fs::path dir;
  std::shared_ptr<const model_config> config;  // null when unavailable before parsing
  model_state state = model_state::unavailable;
  std::string reason;
  std::vector<version_ptr> versions;  // ascending; fixed once the entry is published
};
using model_ptr = std::shared_ptr<model_entry>;

// A warmup sample's inputs in the configuration's order; keel::invalid_argument when the
// sample does not fit the model.
std::vector<tensor> warmup_inputs(const model_config& c, const warmup_sample& s,
                                  const fs::path& dir) {
  for (const auto& [name, in] : s.inputs)
    if (c.find_input(name) == nullptr)
      throw invalid_argument(
          fmt::format("model_warmup '{}': the model has no input '{}'", s.name, name));
  std::mt19937_64 rng(0x6b65656c);
  std::vector<tensor> out;
  for (const tensor_spec& spec : c.inputs) {
    const auto it = s.inputs.find(spec.name);
    if (it == s.inputs.end())
      throw invalid_argument(
          fmt::format("model_warmup '{}': no data for input '{}'", s.name, spec.name));
    const warmup_input& w = it->second;
    if (w.type != spec.type)
      throw invalid_argument(fmt::format("model_warmup '{}' input '{}': {}, the input is {}",
                                         s.name, spec.name, triton_name(w.type),
                                         triton_name(spec.type)));
    std::vector<std::int64_t> shape;
    if (c.max_batch_size > 0) shape.push_back(s.batch_size);
    shape.insert(shape.end(), w.dims.begin(), w.dims.end());
    tensor t(w.type, shape);
    std::span<std::byte> bytes = t.bytes();
    if (w.data == warmup_input::source::file) {
      const fs::path file = dir / "warmup" / w.file;
      const std::string data = read_input_file(file.string());
      if (data.size() != bytes.size())
        throw invalid_argument(fmt::format("{}: {} bytes, input '{}' of shape {} needs {}",
                                           file.string(), data.size(), spec.name,
                                           shape_string(shape), bytes.size()));
      std::memcpy(bytes.data(), data.data(), data.size());
    } else if (w.data == warmup_input::source::random) {
      fill_random(t, rng);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The ensemble tensors' types, checked: every step reads only what exists before it, each
// tensor is written once, every output is written, types agree. Returns the error, or "".
std::string check_ensemble(
    const model_config& e,
    const std::map<std::string, std::shared_ptr<const model_config>, std::less<>>& models) {
  std::map<std::string, dtype> have;
  for (const tensor_spec& in : e.inputs) have[in.name] = in.type;
  std::vector<bool> placed(e.ensemble.size());
  for (std::size_t i = 0; i < e.ensemble.size(); ++i) {
    const ensemble_step& s = e.ensemble[i];
    const auto m = models.find(s.model_name);
    if (m == models.end() || !m->second)
      return fmt::format("ensemble step {} runs model '{}', which is not loaded", i + 1,
                         s.model_name);
    if (m->second->platform == model_platform::ensemble)
      return fmt::format("ensemble step {}: model '{}' is itself an ensemble", i + 1, s.model_name);
    for (const tensor_spec& in : m->second->inputs)
      if (!s.input_map.contains(in.name))
        return fmt::format("ensemble step {} ({}): input_map gives nothing for input '{}'", i + 1,
                           s.model_name, in.name);
    for (const auto& [key, value] : s.input_map)
      if (m->second->find_input(key) == nullptr)
        return fmt::format("ensemble step {}: model '{}' has no input '{}'", i + 1, s.model_name,
                           key);
    for (const auto& [key, value] : s.output_map)
      if (m->second->find_output(key) == nullptr)
        return fmt::format("ensemble step {}: model '{}' has no output '{}'", i + 1, s.model_name,
                           key);
  }
  // Place steps in an order in which their inputs exist (the DAG's topological order).
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < e.ensemble.size(); ++i) {
      const ensemble_step& s = e.ensemble[i];
      if (placed[i] || !std::all_of(s.input_map.begin(), s.input_map.end(),
                                    [&](const auto& kv) { return have.contains(kv.second); }))
        continue;
      const model_config& m = *models.find(s.model_name)->second;
      for (const auto& [key, value] : s.input_map)
        if (have[value] != m.find_input(key)->type)
          return fmt::format("ensemble step {} ({}): input '{}' is {}, tensor '{}' is {}", i + 1,
                             s.model_name, key, triton_name(m.find_input(key)->type), value,
                             triton_name(have[value]));
      for (const auto& [key, value] : s.output_map) {
        if (have.contains(value))
          return fmt::format("ensemble tensor '{}' is written twice (step {})", value, i + 1);
        have[value] = m.find_output(key)->type;
      }
      placed[i] = progress = true;
    }
  }
  for (std::size_t i = 0; i < placed.size(); ++i)
    if (!placed[i])
      return fmt::format("ensemble step {} ({}) reads a tensor no step writes before it", i + 1,
                         e.ensemble[i].model_name);
  for (const tensor_spec& out : e.outputs) {
    const auto it = have.find(out.name);
    if (it == have.end()) return fmt::format("no ensemble step writes output '{}'", out.name);
    if (it->second != out.type)
      return fmt::format("ensemble output '{}' is {}, its step writes {}", out.name,
                         triton_name(out.type), triton_name(it->second));
  }
  return {};
}

}  // namespace

std::string_view name_of(model_state s) noexcept {
  switch (s) {
    case model_state::ready: return "READY";
    case model_state::loading: return "LOADING";
    case model_state::unloaded: return "UNLOADED";
    case model_state::unavailable: break;
  }
  return "UNAVAILABLE";
}

class server::impl {
 public:
  explicit impl(server_options options)
      : options_(std::move(options)),
        budget_(options_.threads > 0 ? options_.threads : default_serve_threads()) {
    if (!options_.loader) throw invalid_argument("keel serve: no model loader given");
    std::vector<repository_model> found = scan_repository(options_.repository);
    // Models first, then the ensembles over them.
    std::stable_partition(found.begin(), found.end(), [](const repository_model& m) {
      return !m.config || m.config->platform != model_platform::ensemble;
    });
    for (repository_model& m : found) publish(load_model(std::move(m)));
  }

  ~impl() {
    std::vector<std::unique_ptr<model_scheduler>> schedulers;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      stopping_ = true;
      drained_.wait(lock, [&] { return in_flight_ == 0; });
      for (auto& [name, m] : models_)
        for (const version_ptr& v : m->versions)
          if (v->scheduler) schedulers.push_back(std::move(v->scheduler));
    }
    schedulers.clear();  // joins the workers, outside the lock
  }

  // The request's id and the version that takes it.
  struct accepted {
    std::uint64_t id = 0;
    std::int64_t version = 0;
  };

  // `hold`: the version counts as busy until `done` returns (an ensemble's step, whose `done`
  // submits the next step on this version's worker: that worker's scheduler must not be evicted
  // from under it). Otherwise it is released first, so that whoever `done` answers sees the
  // version idle.
  accepted submit(std::string_view name, std::int64_t version, infer_request request,
                  infer_callback done, bool hold = false) {
    const model_ptr m = find(name);
    const version_ptr v = pick(*m, version);
    if (m->config->platform == model_platform::ensemble)
      return {run_ensemble(m, v, std::move(request), std::move(done)), v->version};
    model_scheduler* s = nullptr;
    for (;;) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        check_serving(*m);
        if (v->scheduler) {
          s = v->scheduler.get();
          ++v->in_flight;
          ++in_flight_;
          v->last_used = clock::now();
          break;
        }
      }
      reload(*m, *v);
    }
    const std::uint64_t id = ++next_id_;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      live_[id] = live_request{v, s, 0, nullptr};
    }
    auto finished = [this, v, id, hold, done = std::move(done)](std::vector<tensor> outputs,
                                                                const std::exception_ptr& error,
                                                                request_timing t) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        live_.erase(id);
      }
      if (!hold) release(*v, error == nullptr);
      done(std::move(outputs), error, t);
      if (hold) release(*v, error == nullptr);
    };
    std::uint64_t scheduler_id = 0;
    try {
      scheduler_id = s->submit(std::move(request), std::move(finished));
    } catch (...) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        live_.erase(id);
      }
      release(*v, false);
      throw;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = live_.find(id); it != live_.end()) it->second.scheduler_id = scheduler_id;
    return {id, v->version};
  }

  bool cancel(std::uint64_t id);

  std::shared_ptr<const model_config> config(std::string_view name) const {
    return find(name)->config;
  }

  std::vector<std::int64_t> versions(std::string_view name) const {
    const model_ptr m = find(name);
    std::vector<std::int64_t> out;
    for (const version_ptr& v : m->versions) out.push_back(v->version);
    return out;
  }

  bool ready(std::string_view name, std::int64_t version) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = models_.find(name);
    if (it == models_.end() || it->second->state != model_state::ready || stopping_) return false;
    const model_entry& m = *it->second;
    if (version != -1 && std::none_of(m.versions.begin(), m.versions.end(),
                                      [&](const auto& v) { return v->version == version; }))
      return false;
    if (m.config->platform != model_platform::ensemble) return true;
    return std::all_of(m.config->ensemble.begin(), m.config->ensemble.end(), [&](const auto& s) {
      const auto step = models_.find(s.model_name);
      return step != models_.end() && step->second->state == model_state::ready;
    });
  }

  std::vector<model_report> models() const {
    std::vector<model_report> out;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, m] : models_) {
      if (m->versions.empty()) {
        model_report r;
        r.name = name;
        r.state = m->state;
        r.reason = m->reason;
        out.push_back(std::move(r));
        continue;
      }
      for (const version_ptr& v : m->versions) {
        model_report r;
        r.name = name;
        r.version = v->version;
        r.state = v->loading ? model_state::loading : m->state;
        r.reason = m->reason;
        r.resident = v->scheduler != nullptr;
        r.resident_bytes = v->resident_bytes;
        r.loads = v->loads;
        r.load_us = v->load_us;
        r.evictions = v->evictions;
        r.last_inference_ms = v->last_inference_ms;
        r.stats = v->retired;
        if (v->scheduler) add(r.stats, v->scheduler->statistics());
        out.push_back(std::move(r));
      }
    }
    return out;
  }

  void load(std::string_view name) {
    const fs::path dir = options_.repository / std::string(name);
    std::error_code ec;
    if (name.empty() || name.find('/') != std::string_view::npos || name[0] == '.' ||
        !fs::is_directory(dir, ec))
      throw model_not_found(fmt::format("no model '{}' in the repository", name));
    unload(name, model_state::loading, "loading");
    const model_ptr m = load_model(scan_model(dir));
    publish(m);
    if (m->state != model_state::ready) throw invalid_argument(m->reason);
  }

  void unload(std::string_view name, model_state state = model_state::unloaded,
              const std::string& reason = "unloaded by request") {
    std::vector<std::unique_ptr<model_scheduler>> dropped;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto it = models_.find(name);
      if (it == models_.end()) {
        if (state == model_state::unloaded)
          throw model_not_found(fmt::format("no model '{}' in the repository", name));
        return;
      }
      const model_ptr m = it->second;
      m->state = state;
      m->reason = reason;
      drained_.wait(lock, [&] {
        return std::all_of(m->versions.begin(), m->versions.end(),
                           [](const version_ptr& v) { return v->in_flight == 0 && !v->loading; });
      });
      for (const version_ptr& v : m->versions) retire(*v, dropped);
    }
    dropped.clear();
  }

  int threads() const noexcept { return budget_.total(); }
  std::uint64_t memory_budget() const noexcept { return options_.memory_bytes; }
  std::uint64_t resident_bytes() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return resident_;
  }

 private:
  class ensemble_run;

  struct live_request {
    version_ptr version;
    model_scheduler* scheduler = nullptr;  // alive while the request is in flight
    std::uint64_t scheduler_id = 0;
    std::shared_ptr<ensemble_run> ensemble;
  };

  model_ptr find(std::string_view name) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = models_.find(name);
    if (it == models_.end()) throw model_not_found(fmt::format("unknown model '{}'", name));
    if (!it->second->config)
      throw request_rejected(
          fmt::format("model '{}' is unavailable: {}", name, it->second->reason));
    return it->second;
  }

  static version_ptr pick(const model_entry& m, std::int64_t version) {
    if (m.versions.empty())
      throw request_rejected(fmt::format("model '{}' is unavailable: {}", m.name, m.reason));
    if (version == -1) return m.versions.back();
    for (const version_ptr& v : m.versions)
      if (v->version == version) return v;
    std::string served;
    for (const version_ptr& v : m.versions)
      served += fmt::format("{}{}", served.empty() ? "" : ", ", v->version);
    throw model_not_found(
        fmt::format("model '{}' has no version {} (serves {})", m.name, version, served));
  }

  // Under the lock.
  void check_serving(const model_entry& m) const {
    if (stopping_) throw request_rejected("the server is shutting down");
    if (m.state != model_state::ready)
      throw request_rejected(fmt::format("model '{}' is not ready: {}", m.name, m.reason));
  }

  // Ends one request's hold on v; `answered`: it was answered with outputs.
  void release(version_entry& v, bool answered) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      --v.in_flight;
      --in_flight_;
      if (answered) v.last_inference_ms = unix_ms();
    }
    drained_.notify_all();
  }

  // Under the lock: v's scheduler moves to `dropped` (destroyed by the caller, unlocked).
  void retire(version_entry& v, std::vector<std::unique_ptr<model_scheduler>>& dropped) {
    if (!v.scheduler) return;
    add(v.retired, v.scheduler->statistics());
    resident_ -= v.resident_bytes;
    dropped.push_back(std::move(v.scheduler));
  }

  // Under the lock: evicts least recently used idle versions other than `self` until `bytes`
  // more fit the budget. False when they cannot.
  bool make_room(std::uint64_t bytes, const version_entry* self,
                 std::vector<std::unique_ptr<model_scheduler>>& dropped) {
    if (options_.memory_bytes == 0) return true;
    const auto evictable = [&](const version_entry& v) {
      return &v != self && v.scheduler && v.in_flight == 0;
    };
    std::uint64_t pinned = resident_;
    for (const auto& [name, m] : models_)
      for (const version_ptr& v : m->versions)
        if (evictable(*v)) pinned -= v->resident_bytes;
    if (pinned + bytes > options_.memory_bytes) return false;  // evicting all would not do
    while (resident_ + bytes > options_.memory_bytes) {
      version_entry* lru = nullptr;
      for (const auto& [name, m] : models_)
        for (const version_ptr& v : m->versions)
          if (evictable(*v) && (lru == nullptr || v->last_used < lru->last_used)) lru = v.get();
      ++lru->evictions;
      retire(*lru, dropped);
    }
    return true;
  }

  std::string over_budget(const model_entry& m, const version_entry& v, std::uint64_t bytes) const {
    return fmt::format(
        "model '{}' version {} needs {} resident; the memory budget is {} and models in use "
        "hold {}",
        m.name, v.version, format_size(bytes), format_size(options_.memory_bytes),
        format_size(resident_));
  }

  // Loads v's instances, warms them up and starts its scheduler, within the memory budget.
  void load_version(const model_entry& m, version_entry& v) {
    const model_config& c = *m.config;
    std::vector<std::unique_ptr<model_scheduler>> dropped;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      v.loading = true;
      make_room(v.resident_bytes, &v, dropped);  // the size measured last time, if any
    }
    dropped.clear();
    const auto started = clock::now();
    std::unique_ptr<model_scheduler> scheduler;
    std::uint64_t bytes = 0;
    try {
      std::vector<std::unique_ptr<model_instance>> instances;
      for (int i = 0; i < c.instance_count; ++i) {
        instances.push_back(options_.loader(v.file, c));
        bytes += instances.back()->resident_bytes();
      }
      for (const warmup_sample& s : c.warmup) {
        const std::vector<tensor> inputs = warmup_inputs(c, s, m.dir);
        for (auto& instance : instances)
          for (std::uint32_t k = 0; k < s.count; ++k) {
            const thread_budget::lease lease = budget_.acquire();
            instance->run(inputs, lease.threads());
          }
      }
      scheduler = std::make_unique<model_scheduler>(c, std::move(instances), budget_);
    } catch (...) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        v.loading = false;
      }
      drained_.notify_all();
      throw;
    }
    std::string refused;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      v.loading = false;
      v.resident_bytes = bytes;
      if (make_room(bytes, &v, dropped)) {
        v.scheduler = std::move(scheduler);
        resident_ += bytes;
        ++v.loads;
        v.load_us += micros_since(started);
        v.last_used = clock::now();
      } else {
        refused = over_budget(m, v, bytes);
      }
    }
    drained_.notify_all();
    dropped.clear();
    scheduler.reset();
    if (!refused.empty()) throw request_rejected(refused);
  }

  // A request found v evicted: the first one reloads it, the others wait for that load.
  void reload(const model_entry& m, version_entry& v) {
    const std::lock_guard<std::mutex> load_lock(v.load_mutex);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      check_serving(m);
      if (v.scheduler) return;
    }
    load_version(m, v);
  }

  // A model entry from a scanned folder, every version loaded (or the error that stopped it).
  model_ptr load_model(repository_model found) {
    auto m = std::make_shared<model_entry>();
    m->name = found.name;
    m->dir = found.dir;
    if (!found.config) {
      m->reason = found.error;
      return m;
    }
    for (const std::int64_t version : found.versions) {
      auto v = std::make_shared<version_entry>();
      v->version = version;
      v->file = found.model_file(version);
      m->versions.push_back(std::move(v));
    }
    m->config = std::make_shared<const model_config>(std::move(*found.config));
    try {
      if (m->config->platform == model_platform::ensemble) {
        std::map<std::string, std::shared_ptr<const model_config>, std::less<>> configs;
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          for (const auto& [name, other] : models_)
            if (other->state == model_state::ready) configs[name] = other->config;
        }
        const std::string error = check_ensemble(*m->config, configs);
        if (!error.empty())
          throw invalid_argument(fmt::format("{}: {}", (m->dir / "config.pbtxt").string(), error));
      } else {
        for (const version_ptr& v : m->versions) {
          const std::lock_guard<std::mutex> load_lock(v->load_mutex);
          load_version(*m, *v);
        }
      }
      m->state = model_state::ready;
    } catch (const std::exception& e) {
      m->reason = e.what();
      std::vector<std::unique_ptr<model_scheduler>> dropped;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        for (const version_ptr& v : m->versions) retire(*v, dropped);
      }
    }
    return m;
  }

  void publish(model_ptr m) {
    const std::lock_guard<std::mutex> lock(mutex_);
    models_[m->name] = std::move(m);
  }

  std::uint64_t run_ensemble(const model_ptr& m, const version_ptr& v, infer_request request,
                             infer_callback done);

  server_options options_;
  thread_budget budget_;
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  std::map<std::string, model_ptr, std::less<>> models_;
  std::unordered_map<std::uint64_t, live_request> live_;
  std::uint64_t resident_ = 0;
  std::uint64_t in_flight_ = 0;
  bool stopping_ = false;
  std::atomic<std::uint64_t> next_id_{0};
};

// One ensemble request: the tensors produced so far and the steps submitted. A step starts
// when its inputs exist, on the thread that produced the last of them.
class server::impl::ensemble_run : public std::enable_shared_from_this<ensemble_run> {
 public:
  ensemble_run(impl& server, std::shared_ptr<const model_config> config, std::uint32_t priority,
               std::uint64_t timeout_us, infer_callback done)
      : server_(server),
        config_(std::move(config)),
        priority_(priority),
        timeout_us_(timeout_us),
        done_(std::move(done)),
        started_(config_->ensemble.size()) {}

  void start(std::vector<tensor> inputs) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      tensors_[config_->inputs[i].name] = std::move(inputs[i]);
    advance(lock);
  }

  bool cancel() {
    return finish_with(std::make_exception_ptr(
        request_rejected(fmt::format("ensemble '{}': request cancelled", config_->name))));
  }

 private:
  // Under the lock: submits every step whose inputs exist; answers when nothing is left.
  void advance(std::unique_lock<std::mutex>& lock) {
    for (std::size_t i = 0; i < started_.size() && !finished_; ++i) {
      const ensemble_step& step = config_->ensemble[i];
      if (started_[i] || !std::all_of(step.input_map.begin(), step.input_map.end(),
                                      [&](const auto& kv) { return tensors_.contains(kv.second); }))
        continue;
      started_[i] = true;
      ++outstanding_;
      try {
        const std::shared_ptr<const model_config> step_config = server_.config(step.model_name);
        const model_config& c = *step_config;
        infer_request r{{}, priority_, timeout_us_};
        for (const tensor_spec& in : c.inputs)
          r.inputs.push_back(tensors_.at(step.input_map.at(in.name)));
        auto self = shared_from_this();
        step_ids_.insert(server_
                             .submit(
                                 step.model_name, step.model_version, std::move(r),
                                 [self, i, outputs = c.outputs](std::vector<tensor> out,
                                                                const std::exception_ptr& error,
                                                                request_timing t) {
                                   self->step_done(i, outputs, std::move(out), error, t);
                                 },
                                 /*hold=*/true)
                             .id);
      } catch (...) {
        --outstanding_;
        finish(lock, std::current_exception());
        return;
      }
    }
    if (outstanding_ > 0 || finished_) return;
    std::vector<tensor> outputs;
    std::exception_ptr error;
    for (const tensor_spec& out : config_->outputs) {
      const auto it = tensors_.find(out.name);
      if (it == tensors_.end()) {
        error = std::make_exception_ptr(invalid_argument(fmt::format(
            "ensemble '{}': its steps did not write output '{}'", config_->name, out.name)));
        break;
      }
      outputs.push_back(std::move(it->second));
    }
    finished_ = true;
    const request_timing timing = timing_;
    lock.unlock();
    done_(error ? std::vector<tensor>{} : std::move(outputs), error, timing);
    lock.lock();
  }

  void step_done(std::size_t i, const std::vector<tensor_spec>& specs, std::vector<tensor> out,
                 const std::exception_ptr& error, request_timing t) {
    std::unique_lock<std::mutex> lock(mutex_);
    timing_.queue_us += t.queue_us;
    timing_.compute_us += t.compute_us;
    if (error) {
      if (!finished_) finish(lock, error);
      return;
    }
    --outstanding_;
    const ensemble_step& step = config_->ensemble[i];
    for (std::size_t k = 0; k < specs.size() && k < out.size(); ++k)
      if (const auto it = step.output_map.find(specs[k].name); it != step.output_map.end())
        tensors_[it->second] = std::move(out[k]);
    advance(lock);
  }

  // Answers with `error` and cancels the queued steps; false when already answered.
  bool finish_with(std::exception_ptr error) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_) return false;
    finish(lock, std::move(error));
    return true;
  }

  // Under the lock, not yet finished: marks the request answered before anything else can
  // see it, then answers and cancels with the lock released.
  void finish(std::unique_lock<std::mutex>& lock, std::exception_ptr error) {
    finished_ = true;
    const std::vector<std::uint64_t> steps(step_ids_.begin(), step_ids_.end());
    const request_timing timing = timing_;  // steps still answering add to timing_
    lock.unlock();
    for (const std::uint64_t id : steps) server_.cancel(id);
    done_({}, std::move(error), timing);
    lock.lock();
  }

  impl& server_;
  const std::shared_ptr<const model_config> config_;
  const std::uint32_t priority_;
  const std::uint64_t timeout_us_;
  infer_callback done_;
  std::mutex mutex_;
  std::map<std::string, tensor> tensors_;
  std::vector<bool> started_;
  std::set<std::uint64_t> step_ids_;
  request_timing timing_;  // summed over the steps answered
  int outstanding_ = 0;
  bool finished_ = false;
};

bool server::impl::cancel(std::uint64_t id) {
  live_request r;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = live_.find(id);
    if (it == live_.end()) return false;
    r = it->second;
    if (r.ensemble == nullptr) {
      if (r.scheduler_id == 0) return false;  // not queued yet
      ++r.version->in_flight;                 // pins the scheduler while it cancels
      ++in_flight_;
    }
  }
  if (r.ensemble != nullptr) return r.ensemble->cancel();
  const bool cancelled = r.scheduler->cancel(r.scheduler_id);
  release(*r.version, false);  // the pin, not an answer
  return cancelled;
}

std::uint64_t server::impl::run_ensemble(const model_ptr& m, const version_ptr& v,
                                         infer_request request, infer_callback done) {
  const std::int64_t rows = check_inputs(*m->config, request.inputs);
  const auto arrived = clock::now();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    check_serving(*m);
    ++v->in_flight;
    ++in_flight_;
  }
  const std::uint64_t id = ++next_id_;
  auto run = std::make_shared<ensemble_run>(
      *this, m->config, request.priority, request.timeout_us,
      [this, v, id, rows, arrived, done = std::move(done)](
          std::vector<tensor> outputs, const std::exception_ptr& error, request_timing t) {
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          live_.erase(id);
          if (error) {
            ++v->retired.failure;
          } else {
            ++v->retired.success;
            ++v->retired.execution_count;
            v->retired.inference_count += static_cast<std::uint64_t>(rows);
            v->retired.request_us += micros_since(arrived);
          }
        }
        release(*v, error == nullptr);
        done(std::move(outputs), error, t);
      });
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    live_[id] = live_request{v, nullptr, 0, run};
  }
  run->start(std::move(request.inputs));
  return id;
}

server::server(server_options options) : impl_(std::make_unique<impl>(std::move(options))) {}
server::~server() = default;

infer_handle server::infer(std::string_view model, std::int64_t version, infer_request request) {
  auto promise = std::make_shared<std::promise<std::vector<tensor>>>();
  infer_handle h;
  h.model = std::string(model);
  h.outputs = promise->get_future();
  h.timing = std::make_shared<request_timing>();
  const auto accepted =
      impl_->submit(model, version, std::move(request), fulfil(std::move(promise), h.timing));
  h.id = accepted.id;
  h.version = accepted.version;
  return h;
}

bool server::cancel(const infer_handle& handle) { return impl_->cancel(handle.id); }
std::shared_ptr<const model_config> server::config(std::string_view model) const {
  return impl_->config(model);
}
std::vector<std::int64_t> server::versions(std::string_view model) const {
  return impl_->versions(model);
}
bool server::ready(std::string_view model, std::int64_t version) const {
  return impl_->ready(model, version);
}
std::vector<model_report> server::models() const { return impl_->models(); }
void server::load(std::string_view model) { impl_->load(model); }
void server::unload(std::string_view model) { impl_->unload(model); }
int server::threads() const noexcept { return impl_->threads(); }
std::uint64_t server::memory_budget() const noexcept { return impl_->memory_budget(); }
std::uint64_t server::resident_bytes() const { return impl_->resident_bytes(); }

}  // namespace keel::serve
