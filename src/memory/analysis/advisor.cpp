#include "keel/memory/advisor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace keel::memory {
namespace {

allocator_config with(const allocator_config& base, std::string_view extra) {
  return allocator_config::parse(extra, "candidate", base);
}

// Runs work(i) for i in [0, n) on `threads` threads; the first exception any of them threw is
// rethrown here once all have stopped, so none escapes a thread.
template <class F>
void parallel_for(std::size_t n, unsigned threads, F work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto loop = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    }
  };
  threads = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, threads), n));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::vector<candidate> default_candidates(const allocator_config& recorded, bool with_capacity) {
  std::vector<candidate> out;
  out.push_back({recorded, std::nullopt, true});
  const allocator_config base = [&] {
    allocator_config c = recorded;
    c.policy = policy_kind::pytorch;
    return c;
  }();
  for (const char* extra :
       {"max_split_size_mb:64", "max_split_size_mb:128", "max_split_size_mb:256",
        "max_split_size_mb:512", "max_split_size_mb:1024", "roundup_power2_divisions:2",
        "roundup_power2_divisions:4", "roundup_power2_divisions:8",
        "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "expandable_segments:True",
        "expandable_segments:True,roundup_power2_divisions:4",
        "max_split_size_mb:256,roundup_power2_divisions:4", "expandable_segments:False"}) {
    out.push_back({with(base, extra), std::nullopt, false});
  }
  allocator_config keel = base;
  keel.policy = policy_kind::keel;
  out.push_back({keel, std::nullopt, false});
  if (with_capacity) {
    for (const char* extra :
         {"garbage_collection_threshold:0.6", "garbage_collection_threshold:0.8",
          "garbage_collection_threshold:0.8,max_split_size_mb:256"}) {
      out.push_back({with(base, extra), 1.0, false});
    }
  }
  // Drop candidates equal to one before them (the baseline first).
  std::vector<candidate> unique;
  for (const candidate& c : out) {
    const bool duplicate = std::any_of(unique.begin(), unique.end(), [&](const candidate& u) {
      return u.config == c.config && u.memory_fraction == c.memory_fraction;
    });
    if (!duplicate) unique.push_back(c);
  }
  return unique;
}

const mode_advice* advice::mode(start_mode m) const noexcept {
  for (const mode_advice& a : modes) {
    if (a.mode == m) return &a;
  }
  return nullptr;
}

std::optional<fidelity_report> advice::fidelity() const {
  const mode_advice* w = mode(start_mode::window);
  if (w == nullptr || !w->baseline) return std::nullopt;
  return w->ranked[*w->baseline].result.fidelity;
}

advice advise(const trace_model& model, const std::vector<candidate>& candidates,
              const advise_options& options) {
  const auto started = std::chrono::steady_clock::now();
  advice out;
  out.device = model.device;
  out.recorded_peak_reserved = model.recorded_peak_reserved;
  out.capacity =
      options.capacity ? std::optional<std::uint64_t>(*options.capacity) : model.recorded_budget();
  if (model.entries == 0) {
    out.comparable = false;
    out.not_comparable_why =
        "the snapshot holds no trace for this device (a state only): nothing shows how memory "
        "was used";
  } else if (model.segment_events.empty() && model.ooms.empty()) {
    out.comparable = false;
    out.not_comparable_why =
        "the trace window has no segment events (no cudaMalloc, cudaFree or page maps): the "
        "recorded segments already held everything, so every setting would hold the same memory";
  }
  if (!out.comparable) {
    out.record_instead =
        "record from the start of the process, before the model is built: "
        "torch.cuda.memory._record_memory_history(max_entries=1000000), run past the step that "
        "peaks, then torch.cuda.memory._dump_snapshot(\"run.pickle\")";
    out.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    return out;
  }

  const std::size_t per_mode = candidates.size();
  const std::size_t total = per_mode * options.modes.size();
  std::vector<ranked_result> results(total);
  std::size_t done = 0;
  std::mutex progress_mutex;
  const unsigned threads =
      options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  parallel_for(total, threads, [&](std::size_t i) {
    const candidate& c = candidates[i % per_mode];
    replay_options o;
    o.config = c.config;
    o.capacity = out.capacity;
    o.memory_fraction = c.memory_fraction;
    o.start = options.modes[i / per_mode];
    o.timeline_points = 256;
    ranked_result& r = results[i];
    r.settings = c;
    r.result = replay(model, o);
    r.oom = !r.result.avoids_recorded_ooms();
    r.saving = static_cast<std::int64_t>(model.recorded_peak_reserved) -
               static_cast<std::int64_t>(r.result.peak_reserved);
    std::lock_guard lock(progress_mutex);
    ++done;
    if (options.progress) options.progress(done, total);
  });

  for (std::size_t m = 0; m < options.modes.size(); ++m) {
    mode_advice a;
    a.mode = options.modes[m];
    a.ranked.assign(
        std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>(m * per_mode)),
        std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>((m + 1) * per_mode)));
    std::stable_sort(
        a.ranked.begin(), a.ranked.end(), [](const ranked_result& x, const ranked_result& y) {
          if (x.oom != y.oom) return !x.oom;
          if (x.result.peak_reserved != y.result.peak_reserved)
            return x.result.peak_reserved < y.result.peak_reserved;
          return x.result.device_mallocs < y.result.device_mallocs;  // fewer driver calls
        });
    for (std::size_t i = 0; i < a.ranked.size(); ++i) {
      const ranked_result& r = a.ranked[i];
      const bool keel = r.settings.config.policy == policy_kind::keel;
      if (r.settings.baseline) a.baseline = i;
      if (keel && !a.best_keel) a.best_keel = i;
      if (r.oom) continue;
      if (!a.best) a.best = i;
      if (!a.best_pytorch && !keel) a.best_pytorch = i;
    }
    out.modes.push_back(std::move(a));
  }
  out.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return out;
}

std::string environment_line(const candidate& c) {
  allocator_config pytorch_only = c.config;
  pytorch_only.policy = policy_kind::pytorch;
  if (c.config.policy == policy_kind::keel) return "KEEL_ALLOC_CONF=" + c.config.to_string();
  return "PYTORCH_CUDA_ALLOC_CONF=" + pytorch_only.to_string();
}

std::string label(const candidate& c) {
  std::string conf = c.config.to_string();
  if (conf.empty()) conf = "PyTorch defaults";
  if (c.memory_fraction) conf += fmt::format(" +fraction {:.2f}", *c.memory_fraction);
  return conf + (c.baseline ? " [recorded]" : "");
}

}  // namespace keel::memory
