// replay — drive a caching_allocator through a recorded trace on the sim backend and measure.
//
// The starting state comes from the trace_model in one of two modes, the same for every
// setting and policy compared:
// - `window`: the recorded layout (the reconstructed segments, cudaMalloc and expandable,
//   exactly as PyTorch held them): what would have happened next in this window;
// - `fresh`: only the blocks that were live, allocated in address order into an empty
//   allocator: what a restarted process with this setting would do.
// The simulated device hands out the recording's addresses while the replay's driver calls
// are the recording's (address_plan.hpp), so ties in PyTorch's best fit break as they did.
// Its capacity is `capacity` when given, else the budget the recording implies (mapped bytes +
// the driver's free bytes at its last OOM), else unlimited. Then every op runs in order: a
// free of a block whose alloc failed is skipped; a recorded OOM is issued again (served: the
// setting avoids it, and the block is freed at once, as its lifetime is unknown; refused:
// reproduced); the first OOM the recording does not have stops the replay unless
// continue_after_oom. A starting state that does not fit the capacity is an answer
// (start_exceeds_capacity), not an error. Measured: peak allocated (sum of requested bytes),
// peak reserved, fragmentation = peak reserved / peak allocated, reserved memory at the peak
// split into requested, internal (rounding) and external (free gaps), device mallocs,
// retries, OOMs with the allocator's explanation, and in window mode the fidelity against the
// recording. replay() is a pure function of its inputs (thread-safe; advise runs many at once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

enum class start_mode { window, fresh };
std::string_view to_string(start_mode mode) noexcept;  // "window", "fresh"
std::string_view describe(start_mode mode) noexcept;   // the label users read
// "window" or "fresh" (also PyTorch-era names "layout" and "live"); throws invalid_argument.
start_mode parse_start_mode(std::string_view text);

struct replay_options {
  allocator_config config;
  std::optional<std::size_t> capacity;    // device memory for this process (see above)
  std::optional<double> memory_fraction;  // set_memory_fraction (what enables GC thresholds)
  start_mode start = start_mode::window;
  bool continue_after_oom = false;
  std::size_t timeline_points = 512;  // samples kept for plots (0: none)
  bool snapshot_at_peak = false;      // keep the allocator's segments at the reserved peak
  // Stop before the first op that comes from this trace entry or a later one, and keep the
  // allocator's segments at that point in replay_result::final_state.
  std::optional<std::uint32_t> stop_before_entry;
};

struct replay_oom {
  std::uint32_t entry = 0;
  std::uint64_t size = 0;
  bool recorded = false;  // the recording ran out of memory here too
  std::string message;
};

struct segment_mismatch {
  std::size_t index = 0;  // position in the segment sequence
  std::optional<std::uint64_t> recorded;
  std::optional<std::uint64_t> replayed;
};

// How closely a window-mode replay reproduced the recording.
struct fidelity_report {
  std::size_t recorded_segments = 0;  // segment_alloc/segment_map events of the window
  std::size_t replayed_segments = 0;
  std::size_t matched = 0;  // leading segment events whose sizes agree
  std::optional<segment_mismatch> first_mismatch;
  std::uint64_t recorded_peak_reserved = 0;
  std::uint64_t replayed_peak_reserved = 0;
  std::size_t recorded_ooms = 0;
  std::size_t reproduced_ooms = 0;  // recorded OOMs that also failed in the replay
  std::size_t allocs = 0;           // allocs replayed
  std::size_t allocs_at_recorded_address = 0;

  // Every segment event in order, the peak to the byte, and every recorded OOM.
  bool exact() const noexcept;
  // One line for the user, e.g. "the replay reproduces all 783 segment events and the peak
  // reserved (56.91 GiB) of the recording".
  std::string line() const;
};

struct timeline_point {
  std::uint32_t entry = 0;
  std::uint64_t allocated = 0;  // requested bytes live
  std::uint64_t reserved = 0;
};

struct replay_result {
  policy_kind policy = policy_kind::pytorch;
  std::string conf;
  int device = 0;
  start_mode start = start_mode::window;
  std::optional<std::uint64_t> capacity;  // what the simulated device had
  std::size_t events = 0;                 // trace entries of the device
  std::size_t ops = 0;                    // ops replayed
  // Set when the starting state does not fit the capacity; nothing was replayed.
  std::optional<std::string> start_exceeds_capacity;
  std::uint64_t start_reserved = 0;
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
  std::optional<std::uint32_t> peak_entry;  // the entry whose op reached the peak; none: the start
  double fragmentation = 0.0;
  std::uint64_t requested_at_peak = 0;
  std::uint64_t internal_at_peak = 0;  // rounding inside live blocks
  std::uint64_t external_at_peak = 0;  // free memory in segments
  std::int64_t device_mallocs = 0;
  std::int64_t retries = 0;
  std::vector<replay_oom> ooms;
  bool stopped_at_oom = false;           // an OOM the recording does not have ended the replay
  std::size_t recorded_ooms_served = 0;  // recorded OOM requests this setting served
  std::optional<fidelity_report>
      fidelity;  // window mode, when the window has segment events or OOMs
  std::vector<timeline_point> timeline;
  std::optional<snapshot> peak_state;
  std::optional<snapshot> final_state;  // with stop_before_entry
  double elapsed_ms = 0.0;

  // No OOM at all, or only the recorded ones (and the replay ran to the end).
  bool completed() const noexcept { return !start_exceeds_capacity && !stopped_at_oom; }
  // Every OOM the recording had was served and no new one occurred.
  bool avoids_recorded_ooms() const noexcept { return completed() && ooms.empty(); }
};

replay_result replay(const trace_model& model, const replay_options& options);

}  // namespace keel::memory
