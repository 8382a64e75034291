// advisor — which allocator setting would have used the least memory on a recorded trace.
//
// advise() replays a trace_model once per candidate (PyTorch's settings one at a time and in
// useful combinations, and keel's policy) and mode on a pool of threads. Every candidate of a
// mode starts from the same state (replay.hpp: `window`, the recorded layout, and `fresh`,
// the live blocks of a restarted process), on the same simulated device: the capacity given,
// else the budget the recording implies (its last OOM), else unlimited. Candidates are ranked
// by peak reserved memory (then device mallocs); candidates that run out of memory — or do
// not serve a request the recording could not serve — rank last. The saving of a candidate is
// the recording's peak reserved memory minus the candidate's peak: what really happened, not
// a replay of it. The recorded settings are always a candidate, and in window mode their
// replay is held to the recording (the fidelity report). A window with no segment events
// cannot tell settings apart (each would hold the same segments): advise then replays
// nothing and says what to record instead. Garbage-collection thresholds act only under a
// memory fraction, so they are tried (with fraction 1.0) only when a capacity is known.
// Thread-safe; the progress callback is called from worker threads under a lock, once per
// finished replay.
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
  std::optional<std::size_t> capacity;  // default: the recorded budget, else unlimited
  unsigned threads = 0;                 // 0: one per hardware thread
  std::vector<start_mode> modes{start_mode::window, start_mode::fresh};
  std::function<void(std::size_t done, std::size_t total)> progress;
};

struct ranked_result {
  candidate settings;
  replay_result result;
  bool oom = false;         // ran out of memory, or did not serve a recorded OOM's request
  std::int64_t saving = 0;  // recorded peak reserved - this candidate's peak reserved
};

struct mode_advice {
  start_mode mode = start_mode::window;
  std::vector<ranked_result> ranked;        // best first
  std::optional<std::size_t> best;          // index into ranked: lowest peak without OOM
  std::optional<std::size_t> best_pytorch;  // the same among policy pytorch only
  std::optional<std::size_t> best_keel;     // keel's policy
  std::optional<std::size_t> baseline;      // the recorded settings
};

struct advice {
  int device = 0;
  std::uint64_t recorded_peak_reserved = 0;  // what every saving is measured against
  std::optional<std::uint64_t> capacity;     // the simulated device's memory
  bool comparable = true;
  std::string not_comparable_why;  // when !comparable
  std::string record_instead;      // when !comparable: how to record a usable trace
  std::vector<mode_advice> modes;  // in the order asked
  double elapsed_ms = 0.0;

  const mode_advice* mode(start_mode m) const noexcept;
  // The recorded settings replayed from the recorded layout, against the recording.
  std::optional<fidelity_report> fidelity() const;
};

advice advise(const trace_model& model, const std::vector<candidate>& candidates,
              const advise_options& options);

// The environment line that selects a candidate: "PYTORCH_CUDA_ALLOC_CONF=..." for PyTorch's
// allocator, "KEEL_ALLOC_CONF=..." for keel's policy.
std::string environment_line(const candidate& c);
// The candidate in words: its settings, "PyTorch defaults", "+fraction 1.0", "[recorded]".
std::string label(const candidate& c);

}  // namespace keel::memory
