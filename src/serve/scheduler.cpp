#include "keel/serve/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

namespace keel::serve {
namespace {

using clock = std::chrono::steady_clock;

std::uint64_t micros(clock::duration d) {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
}

struct pending {
  std::uint64_t id = 0;
  std::vector<tensor> inputs;
  std::int64_t rows = 1;
  infer_callback done;
  clock::time_point arrived;
  clock::time_point deadline = clock::time_point::max();
  bool delay_on_timeout = false;
};

using pending_ptr = std::unique_ptr<pending>;

void answer(pending& p, std::vector<tensor> outputs, std::exception_ptr error,
            request_timing timing) noexcept {
  try {
    p.done(std::move(outputs), std::move(error), timing);
  } catch (...) {  // the callback's contract forbids throwing; a worker must not die of it
  }
}

// Two requests batch when every input agrees beyond dimension 0.
bool batches_with(const pending& a, const pending& b) {
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    const auto& x = a.inputs[i].shape();
    const auto& y = b.inputs[i].shape();
    if (x.size() != y.size() || !std::equal(x.begin() + 1, x.end(), y.begin() + 1)) return false;
  }
  return true;
}

}  // namespace

std::int64_t check_inputs(const model_config& config, const std::vector<tensor>& inputs) {
  if (inputs.size() != config.inputs.size())
    throw invalid_argument(fmt::format("model '{}' takes {} inputs, got {}", config.name,
                                       config.inputs.size(), inputs.size()));
  std::int64_t rows = 1;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const tensor_spec& spec = config.inputs[i];
    const tensor& t = inputs[i];
    if (t.type() != spec.type)
      throw invalid_argument(fmt::format("model '{}' input '{}': {} given, {} expected",
                                         config.name, spec.name, triton_name(t.type()),
                                         triton_name(spec.type)));
    std::span<const std::int64_t> shape = t.shape();
    if (config.max_batch_size > 0) {
      if (shape.empty() || shape[0] < 1 || shape[0] > config.max_batch_size ||
          (i > 0 && shape[0] != rows))
        throw invalid_argument(
            fmt::format("model '{}' input '{}': shape {} needs a batch dimension of 1 to {}{}",
                        config.name, spec.name, shape_string(shape), config.max_batch_size,
                        i > 0 ? fmt::format(" equal to the first input's ({})", rows) : ""));
      rows = shape[0];
      shape = shape.subspan(1);
    }
    if (!spec.accepts(shape))
      throw invalid_argument(fmt::format("model '{}' input '{}': shape {} does not match {}{}",
                                         config.name, spec.name, shape_string(t.shape()),
                                         config.max_batch_size > 0 ? "[-1," : "[",
                                         shape_string(spec.dims).substr(1)));
  }
  return rows;
}

class model_scheduler::impl {
 public:
  impl(model_config config, std::vector<std::unique_ptr<model_instance>> instances,
       thread_budget& budget)
      : config_(std::move(config)), instances_(std::move(instances)), budget_(budget) {
    if (instances_.empty())
      throw invalid_argument(fmt::format("model '{}': no instance to run", config_.name));
    const std::uint32_t levels = std::max(1u, config_.batching.priority_levels);
    queues_.resize(levels);
    if (config_.has_dynamic_batching) {
      const auto& preferred = config_.batching.preferred_batch_sizes;
      target_rows_ = preferred.empty() ? config_.max_batch_size : preferred.back();
    }
    for (auto& instance : instances_)
      workers_.emplace_back([this, m = instance.get()] { work(*m); });
  }

  ~impl() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  std::uint64_t submit(infer_request request, infer_callback done) {
    auto p = std::make_unique<pending>();
    p->done = std::move(done);
    p->rows = check_inputs(config_, request.inputs);
    p->inputs = std::move(request.inputs);
    p->arrived = clock::now();
    const std::uint32_t level = level_of(request.priority);
    const queue_policy& policy = policy_of(level);
    std::uint64_t timeout = policy.default_timeout_us;
    if (request.timeout_us > 0 &&
        (!config_.has_dynamic_batching ||
         (policy.allow_timeout_override && (timeout == 0 || request.timeout_us < timeout))))
      timeout = request.timeout_us;
    if (timeout > 0) p->deadline = p->arrived + std::chrono::microseconds(timeout);
    p->delay_on_timeout = policy.delay_on_timeout;
    std::uint64_t id = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_)
        throw request_rejected(fmt::format("model '{}' is shutting down", config_.name));
      auto& queue = queues_[level - 1];
      if (policy.max_queue_size > 0 && queue.size() >= policy.max_queue_size) {
        ++stats_.failure;
        throw request_rejected(fmt::format("model '{}': queue full ({} requests)", config_.name,
                                           policy.max_queue_size));
      }
      p->id = id = ++next_id_;
      queue.push_back(std::move(p));
      ++stats_.pending;
    }
    changed_.notify_all();
    return id;
  }

  bool cancel(std::uint64_t id) {
    pending_ptr found;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (auto& queue : queues_) {
        const auto it = std::find_if(queue.begin(), queue.end(),
                                     [&](const pending_ptr& p) { return p->id == id; });
        if (it != queue.end()) {
          found = std::move(*it);
          queue.erase(it);
          --stats_.pending;
          ++stats_.failure;
          break;
        }
      }
    }
    if (!found) return false;
    answer(*found, {},
           std::make_exception_ptr(
               request_rejected(fmt::format("model '{}': request {} cancelled", config_.name, id))),
           {micros(clock::now() - found->arrived), 0});
    return true;
  }

  model_statistics statistics() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  const model_config& config() const noexcept { return config_; }

 private:
  std::uint32_t level_of(std::uint32_t priority) const {
    const std::uint32_t levels = static_cast<std::uint32_t>(queues_.size());
    if (priority == 0) return std::max(1u, config_.batching.default_priority_level);
    if (priority > levels)
      throw invalid_argument(
          fmt::format("model '{}': priority {} is outside 1..{}", config_.name, priority, levels));
    return priority;
  }

  const queue_policy& policy_of(std::uint32_t level) const {
    const auto it = config_.batching.priority_policies.find(level);
    return it == config_.batching.priority_policies.end() ? config_.batching.default_policy
                                                          : it->second;
  }

  // Under the lock: the timed-out requests that must not run, out of the queues.
  std::vector<pending_ptr> take_expired(clock::time_point now) {
    std::vector<pending_ptr> out;
    for (auto& queue : queues_)
      for (auto it = queue.begin(); it != queue.end();) {
        if ((*it)->deadline <= now && !(*it)->delay_on_timeout) {
          out.push_back(std::move(*it));
          it = queue.erase(it);
        } else {
          ++it;
        }
      }
    stats_.pending -= out.size();
    stats_.failure += out.size();
    return out;
  }

  pending_ptr pop_first() {
    for (auto& queue : queues_)
      if (!queue.empty()) {
        pending_ptr p = std::move(queue.front());
        queue.pop_front();
        --stats_.pending;
        return p;
      }
    return nullptr;
  }

  // Under the lock: moves the queued requests that batch with batch[0] and fit into `batch`.
  void gather(std::vector<pending_ptr>& batch, std::int64_t& rows) {
    for (auto& queue : queues_)
      for (auto it = queue.begin(); it != queue.end() && rows < config_.max_batch_size;) {
        if (rows + (*it)->rows <= config_.max_batch_size && batches_with(*batch[0], **it)) {
          rows += (*it)->rows;
          batch.push_back(std::move(*it));
          it = queue.erase(it);
          --stats_.pending;
        } else {
          ++it;
        }
      }
  }

  void answer_expired(std::vector<pending_ptr>& expired) {
    for (pending_ptr& p : expired)
      answer(*p, {},
             std::make_exception_ptr(request_rejected(fmt::format(
                 "model '{}': request {} timed out in the queue", config_.name, p->id))),
             {micros(clock::now() - p->arrived), 0});
  }

  void work(model_instance& instance) {
    for (;;) {
      std::vector<pending_ptr> batch, expired;
      std::int64_t rows = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return (stats_.pending > 0 && !forming_) || (stopping_ && stats_.pending == 0);
        });
        if (stats_.pending == 0) return;  // stopping, drained
        expired = take_expired(clock::now());
        if (pending_ptr first = pop_first()) {
          rows = first->rows;
          batch.push_back(std::move(first));
          if (config_.has_dynamic_batching) {
            forming_ = true;
            const auto until =
                batch[0]->arrived + std::chrono::microseconds(config_.batching.max_queue_delay_us);
            for (;;) {
              gather(batch, rows);
              if (rows >= target_rows_ || stopping_ || clock::now() >= until) break;
              changed_.wait_until(lock, until);
            }
            forming_ = false;
          }
        }
      }
      changed_.notify_all();
      answer_expired(expired);
      if (!batch.empty()) run(instance, batch, rows);
    }
  }

  void run(model_instance& instance, std::vector<pending_ptr>& batch, std::int64_t rows) {
    const auto started = clock::now();
    std::vector<std::vector<tensor>> answers(batch.size());
    std::exception_ptr failed;
    try {
      std::vector<tensor> joined;
      if (batch.size() == 1) {
        joined = std::move(batch[0]->inputs);
      } else {
        std::vector<const tensor*> parts(batch.size());
        for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
          for (std::size_t r = 0; r < batch.size(); ++r) parts[r] = &batch[r]->inputs[i];
          joined.push_back(concat_batch(parts));
        }
      }
      std::vector<tensor> outputs;
      {
        const auto per_row = us_per_row_.load(std::memory_order_relaxed);
        const thread_budget::lease lease = budget_.acquire(
            static_cast<std::uint64_t>(per_row * static_cast<double>(rows)), &account_);
        const auto ran = clock::now();
        outputs = instance.run(joined, lease.threads());
        // What the budget expects of this model's next run: a moving average per row.
        const double took =
            static_cast<double>(micros(clock::now() - ran)) / static_cast<double>(rows);
        us_per_row_.store(per_row == 0 ? took : 0.8 * per_row + 0.2 * took,
                          std::memory_order_relaxed);
      }
      if (batch.size() == 1) {
        answers[0] = std::move(outputs);
      } else {
        for (const tensor& out : outputs)
          if (out.shape().empty() || out.shape()[0] != rows)
            throw invalid_argument(
                fmt::format("model '{}' returned shape {} for a batch of {} rows", config_.name,
                            shape_string(out.shape()), rows));
        std::int64_t at = 0;
        for (std::size_t r = 0; r < batch.size(); ++r) {
          for (const tensor& out : outputs)
            answers[r].push_back(slice_batch(out, at, batch[r]->rows));
          at += batch[r]->rows;
        }
      }
    } catch (...) {
      failed = std::current_exception();
    }
    const auto finished = clock::now();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.execution_count;
      for (const pending_ptr& p : batch) {
        stats_.queue_us += micros(started - p->arrived);
        stats_.compute_us += micros(finished - started);
        if (failed) {
          ++stats_.failure;
        } else {
          ++stats_.success;
          stats_.inference_count += static_cast<std::uint64_t>(p->rows);
          stats_.request_us += micros(finished - p->arrived);
        }
      }
    }
    for (std::size_t r = 0; r < batch.size(); ++r)
      answer(*batch[r], std::move(answers[r]), failed,
             {micros(started - batch[r]->arrived), micros(finished - started)});
  }

  const model_config config_;
  std::vector<std::unique_ptr<model_instance>> instances_;
  thread_budget& budget_;
  thread_budget::account account_{budget_};  // this model's thread time
  std::atomic<double> us_per_row_{0};        // run time per row, averaged (workers race benignly)
  std::int64_t target_rows_ = 1;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<pending_ptr>> queues_;  // one per priority level, 1 first
  model_statistics stats_;
  std::uint64_t next_id_ = 0;
  bool forming_ = false;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: started after everything they read
};

model_scheduler::model_scheduler(model_config config,
                                 std::vector<std::unique_ptr<model_instance>> instances,
                                 thread_budget& budget)
    : impl_(std::make_unique<impl>(std::move(config), std::move(instances), budget)) {}

model_scheduler::~model_scheduler() = default;

infer_callback fulfil(std::shared_ptr<std::promise<std::vector<tensor>>> outputs,
                      std::shared_ptr<request_timing> timing) {
  return [outputs = std::move(outputs), timing = std::move(timing)](
             std::vector<tensor> values, const std::exception_ptr& error, request_timing t) {
    if (timing) *timing = t;
    if (error)
      outputs->set_exception(error);
    else
      outputs->set_value(std::move(values));
  };
}

ticket model_scheduler::submit(infer_request request) {
  auto promise = std::make_shared<std::promise<std::vector<tensor>>>();
  ticket t;
  t.outputs = promise->get_future();
  t.id = impl_->submit(std::move(request), fulfil(std::move(promise)));
  return t;
}

std::uint64_t model_scheduler::submit(infer_request request, infer_callback done) {
  return impl_->submit(std::move(request), std::move(done));
}
bool model_scheduler::cancel(std::uint64_t id) { return impl_->cancel(id); }
model_statistics model_scheduler::statistics() const { return impl_->statistics(); }
const model_config& model_scheduler::config() const noexcept { return impl_->config(); }

}  // namespace keel::serve
