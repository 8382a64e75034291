#include "keel/memory/advisor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace keel::memory {
namespace {

allocator_config with(const allocator_config& base, std::string_view extra) {
  return allocator_config::parse(extra, "candidate", base);
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
        "max_split_size_mb:256,roundup_power2_divisions:4", "policy:keel"}) {
    out.push_back({with(base, extra), std::nullopt, false});
  }
  if (with_capacity) {
    for (const char* extra : {"garbage_collection_threshold:0.6", "garbage_collection_threshold:0.8",
                              "garbage_collection_threshold:0.8,max_split_size_mb:256"}) {
      out.push_back({with(base, extra), 1.0, false});
    }
  }
  // Drop candidates equal to the baseline.
  std::vector<candidate> unique;
  for (const candidate& c : out) {
    const bool duplicate = std::any_of(unique.begin(), unique.end(), [&](const candidate& u) {
      return u.config == c.config && u.memory_fraction == c.memory_fraction;
    });
    if (!duplicate) unique.push_back(c);
  }
  return unique;
}

advice advise(const trace_model& model, const std::vector<candidate>& candidates,
              const advise_options& options) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<ranked_result> results(candidates.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex progress_mutex;
  const auto work = [&] {
    for (std::size_t i = next++; i < candidates.size(); i = next++) {
      replay_options o;
      o.config = candidates[i].config;
      o.capacity = options.capacity;
      o.memory_fraction = candidates[i].memory_fraction;
      o.timeline_points = 256;
      results[i].settings = candidates[i];
      results[i].result = replay(model, o);
      results[i].oom = !results[i].result.ooms.empty();
      std::lock_guard lock(progress_mutex);
      ++done;
      if (options.progress) options.progress(done, candidates.size());
    }
  };
  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, candidates.size()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  std::stable_sort(results.begin(), results.end(), [](const ranked_result& a, const ranked_result& b) {
    if (a.oom != b.oom) return !a.oom;
    if (a.result.peak_reserved != b.result.peak_reserved) {
      return a.result.peak_reserved < b.result.peak_reserved;
    }
    return a.result.device_mallocs < b.result.device_mallocs;  // fewer driver calls
  });
  advice out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ranked_result& r = results[i];
    if (r.settings.baseline) out.baseline = i;
    if (r.oom) continue;
    if (!out.best) out.best = i;
    if (!out.best_pytorch && r.settings.config.policy == policy_kind::pytorch) out.best_pytorch = i;
  }
  out.ranked = std::move(results);
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

}  // namespace keel::memory
