// trace_model — one device's recorded allocator trace, turned into something replayable.
//
// A snapshot's trace is a ring buffer: it may begin in the middle of a run, with segments
// allocated and blocks live before its first entry. build_trace_model reconstructs the state
// at the window's start by working back from the final segments:
// - segments at the start = final segments, minus those segment_alloc'ed in the window, plus
//   those segment_free'd in the window (walking the trace backwards);
// - blocks live at the start = final active blocks not allocated in the window, plus blocks
//   freed in the window but never allocated in it;
// - a reconstructed block is round_size(requested) under the recorded settings and absorbs the
//   gap after it when PyTorch's should_split would not have split that gap off; the remaining
//   gaps are free blocks.
// The ops are the window's allocs and completed frees (a free takes effect when PyTorch
// returned the block to its pool), with one empty_cache wherever the recording shows a run of
// segment frees. The model is an immutable value; building it is O(entries log entries).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {

enum class op_kind : std::uint8_t { alloc, free, empty_cache };

struct replay_op {
  op_kind kind = op_kind::alloc;
  std::uint64_t addr = 0;     // the recorded address (alloc, free)
  std::uint64_t size = 0;     // requested bytes (alloc, free)
  stream_id stream = 0;
  std::uint32_t entry = 0;    // index of the trace entry this op comes from
};

struct start_block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;
  bool live = false;
};

struct start_segment {
  std::uint64_t address = 0;
  std::uint64_t total_size = 0;
  stream_id stream = 0;
  bool is_small = false;
  std::vector<start_block> blocks;  // tile the segment, free gaps merged
};

struct recorded_segment_event {
  trace_action action = trace_action::segment_alloc;  // segment_alloc or segment_map
  std::uint64_t size = 0;
  std::uint32_t entry = 0;
};

struct recorded_oom {
  std::uint32_t entry = 0;
  std::uint64_t size = 0;
  std::uint64_t device_free = 0;
};

struct trace_model {
  int device = 0;
  std::size_t entries = 0;                 // trace entries recorded for this device
  std::vector<start_segment> start;        // state at the window's start
  std::vector<replay_op> ops;
  std::vector<recorded_segment_event> recorded_segments;  // in the window, in order
  std::vector<recorded_oom> ooms;
  allocator_config recorded_config;        // from allocator_settings, else PyTorch's defaults
  bool settings_recorded = false;
  std::uint64_t start_reserved = 0;
  std::uint64_t start_requested = 0;       // requested bytes live at the start
  std::vector<std::string> notes;          // what the reconstruction had to assume
};

// The devices that have trace entries or segments, ascending.
std::vector<int> devices_in(const snapshot& s);

// The allocator settings a snapshot records (PyTorch's defaults when it records none).
allocator_config recorded_config(const snapshot& s);

// Builds the model for `device`. Throws keel::invalid_argument when the snapshot has neither
// segments nor trace entries for that device.
trace_model build_trace_model(const snapshot& s, int device);

}  // namespace keel::memory
