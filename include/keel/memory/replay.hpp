// replay — drive a caching_allocator through a recorded trace on the sim backend and measure.
//
// The starting state comes from the trace_model in one of two ways: `layout` adopts the
// reconstructed segments exactly as PyTorch held them (the default for policy pytorch, and
// what the fidelity check needs), `live` allocates only the blocks that were live, in address
// order, into a fresh allocator (the default for policy keel, which lays memory out its own
// way). Then every op runs in order; a free of a block whose alloc failed (an OOM under
// --capacity) is skipped. Measured: peak allocated (the peak of the sum of requested bytes),
// peak reserved, fragmentation = peak reserved / peak allocated, the split of reserved memory
// at the reserved peak into requested, internal (rounding inside blocks) and external (free
// gaps), device mallocs, retries, OOMs with the allocator's explanation, and for policy
// pytorch the fidelity of the segment_alloc/segment_map sequence against the recording.
// replay() is a pure function of its inputs (thread-safe; advise runs many at once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

enum class start_mode { layout, live };

struct replay_options {
  allocator_config config;
  std::optional<std::size_t> capacity;    // device memory; unlimited when absent
  std::optional<double> memory_fraction;  // set_memory_fraction (what enables GC thresholds)
  std::optional<start_mode> start;        // default: layout for pytorch, live for keel
  std::size_t timeline_points = 512;      // samples kept for plots (0: none)
  bool snapshot_at_peak = false;          // keep the allocator's segments at the reserved peak
  // Stop before the first op that comes from this trace entry or a later one, and keep the
  // allocator's segments at that point in replay_result::final_state.
  std::optional<std::uint32_t> stop_before_entry;
};

struct replay_oom {
  std::uint32_t entry = 0;
  std::uint64_t size = 0;
  std::string message;
};

struct segment_mismatch {
  std::size_t index = 0;  // position in the segment sequence
  std::optional<std::uint64_t> recorded;
  std::optional<std::uint64_t> replayed;
};

struct fidelity_report {
  std::size_t recorded_segments = 0;
  std::size_t replayed_segments = 0;
  std::size_t matched = 0;  // leading segment events whose sizes agree
  std::optional<segment_mismatch> first_mismatch;
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
  start_mode start = start_mode::layout;
  std::size_t events = 0;  // trace entries of the device
  std::size_t ops = 0;     // allocs, frees and empty_caches replayed
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
  double fragmentation = 0.0;
  std::uint64_t requested_at_peak = 0;
  std::uint64_t internal_at_peak = 0;  // rounding inside live blocks
  std::uint64_t external_at_peak = 0;  // free memory in segments
  std::int64_t device_mallocs = 0;
  std::int64_t retries = 0;
  std::vector<replay_oom> ooms;
  std::optional<fidelity_report> fidelity;  // policy pytorch and segment events in the window
  std::vector<timeline_point> timeline;
  std::optional<snapshot> peak_state;
  std::optional<snapshot> final_state;  // with stop_before_entry
  double elapsed_ms = 0.0;
};

replay_result replay(const trace_model& model, const replay_options& options);

}  // namespace keel::memory
