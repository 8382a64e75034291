// advisor — which allocator setting would have used the least memory on a recorded trace.
//
// advise() replays a trace_model once per candidate (PyTorch's settings one at a time and in
// useful combinations, and keel's policy) on a pool of threads and ranks the results by peak
// reserved memory; candidates that hit an OOM under the given capacity rank last. The
// recorded settings are always the first candidate (the baseline: what really happened).
// Garbage-collection thresholds only act with a memory fraction, so they are tried only when
// a capacity is given (with fraction 1.0). Thread-safe; the progress callback is called from
// worker threads under a lock, once per finished candidate.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

struct candidate {
  allocator_config config;
  std::optional<double> memory_fraction;
  bool baseline = false;  // the recorded settings
};

// The sweep for a trace recorded with `recorded` settings.
std::vector<candidate> default_candidates(const allocator_config& recorded, bool with_capacity);

struct advise_options {
  std::optional<std::size_t> capacity;
  unsigned threads = 0;  // 0: one per hardware thread
  std::function<void(std::size_t done, std::size_t total)> progress;
};

struct ranked_result {
  candidate settings;
  replay_result result;
  bool oom = false;
};

struct advice {
  std::vector<ranked_result> ranked;           // best first
  std::optional<std::size_t> best;             // index into ranked: lowest peak without OOM
  std::optional<std::size_t> best_pytorch;     // the same among policy pytorch only
  std::optional<std::size_t> baseline;         // the recorded settings
  double elapsed_ms = 0.0;
};

advice advise(const trace_model& model, const std::vector<candidate>& candidates,
              const advise_options& options);

// The environment line that selects a candidate: "PYTORCH_CUDA_ALLOC_CONF=..." for PyTorch's
// allocator, "KEEL_ALLOC_CONF=..." for keel's policy.
std::string environment_line(const candidate& c);

}  // namespace keel::memory
