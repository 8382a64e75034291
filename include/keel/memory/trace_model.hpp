// trace_model — one device's recorded allocator trace, turned into something replayable.
//
// A snapshot's trace is a ring buffer: it may begin in the middle of a run, with segments
// allocated and blocks live before its first entry. build_trace_model reconstructs the state
// at the window's start by working back from the final segments, per segment kind:
// - cudaMalloc segments at the start = final segments, minus those segment_alloc'ed in the
//   window, plus those segment_free'd in the window (walking the trace backwards);
// - expandable segments are page ranges: the pages mapped at the start = the final mapped
//   runs, minus every segment_map of the window, plus every segment_unmap (walking
//   backwards), kept per virtual range (one per stream and pool, as PyTorch reserves them);
//   a window that starts with nothing mapped starts with nothing mapped;
// - blocks live at the start = final active blocks not allocated in the window, plus blocks
//   freed in the window but never allocated in it;
// - a reconstructed block is round_size(requested) under the recorded settings and absorbs the
//   gap after it when PyTorch's should_split would not have split that gap off; the remaining
//   gaps are free blocks.
// The ops are the window's allocs and completed frees (a free takes effect when PyTorch
// returned the block to its pool), one empty_cache wherever the recording shows a run of
// segment frees, and every recorded `oom` entry as an allocation the recording could not serve
// (op_kind::oom). The recorded driver calls (segment events with their addresses), the peak
// reserved memory they imply and, per OOM, the memory the process could use (mapped bytes +
// the driver's free bytes at that moment) are kept so a replay can be held to the recording.
// The model is an immutable value; building it is O(entries log entries).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/address_plan.hpp"
#include "keel/memory/allocator_config.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/callsites.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {

enum class op_kind : std::uint8_t {
  alloc,
  free,
  empty_cache,
  oom,  // a request the recording could not serve (its `oom` entry); size is PyTorch's rounded size
};

struct replay_op {
  op_kind kind = op_kind::alloc;
  std::uint64_t addr = 0;  // the recorded address (alloc, free)
  std::uint64_t size = 0;  // requested bytes (alloc, free, oom)
  stream_id stream = 0;
  std::uint32_t entry = 0;  // index of the trace entry this op comes from
  frame_stack frames;       // alloc, oom: the stack that asked
};

struct start_block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;
  bool live = false;
  // The allocating stack: from the final state's block, or, for a block freed in the window,
  // one frame "<before the trace window>" (the trace holds only its free's stack).
  frame_stack frames;
};

struct start_segment {
  std::uint64_t address = 0;
  std::uint64_t total_size = 0;
  stream_id stream = 0;
  bool is_small = false;
  bool expandable = false;          // a run of mapped pages inside an expandable range
  std::uint64_t range_base = 0;     // expandable: the base of the virtual range it lies in
  std::vector<start_block> blocks;  // tile the segment, free gaps merged
};

// A driver call the recording shows: segment_alloc/segment_free (cudaMalloc/cudaFree) or
// segment_map/segment_unmap (pages of an expandable range).
struct segment_event {
  trace_action action = trace_action::segment_alloc;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  stream_id stream = 0;
  std::uint32_t entry = 0;
};

struct recorded_oom {
  std::uint32_t entry = 0;
  std::uint64_t size = 0;         // the request, rounded as PyTorch rounds it
  std::uint64_t device_free = 0;  // what the driver reported free
  std::uint64_t reserved = 0;     // what this process held (segments + mapped pages) then
  std::uint64_t budget() const noexcept { return reserved + device_free; }
};

// An expandable virtual range the recording used, with the stream and pool it serves.
struct recorded_range {
  std::uint64_t base = 0;
  stream_id stream = 0;
  bool is_small = false;
};

// The recorded allocations live at one moment, from the recording alone (the start's live
// blocks, then the window's allocs and completed frees): `live` in use, `pending` freed by the
// program but waiting for another stream's work (free_requested, not yet free_completed).
// Bytes are rounded as the recorded settings round.
struct live_state {
  std::vector<live_allocation> live;
  std::vector<live_allocation> pending;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_requested = 0;
  std::uint64_t pending_bytes = 0;
};

// What the reconstruction had to assume; repeated findings collapse into one note with a count.
struct model_note {
  std::string text;     // the finding, in words
  std::string example;  // its first instance (an address, a size)
  std::size_t count = 1;
};

struct trace_model {
  int device = 0;
  std::size_t entries = 0;  // trace entries recorded for this device
  std::optional<std::int64_t> first_time_us, last_time_us;
  std::vector<start_segment> start;  // state at the window's start
  std::vector<replay_op> ops;
  std::vector<segment_event> segment_events;  // the window's driver calls, in order
  std::vector<recorded_range> ranges;         // expandable ranges, by first use (start ones first)
  std::vector<recorded_oom> ooms;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> free_requests;  // (entry, addr), in order
  allocator_config recorded_config;  // from allocator_settings, else PyTorch's defaults
  bool settings_recorded = false;
  // The PYTORCH_CUDA_ALLOC_CONF grammar of the PyTorch that wrote the snapshot, as its
  // allocator_settings imply it (the newest when it records none).
  pytorch_grammar grammar = k_newest_pytorch_grammar;
  std::uint64_t start_reserved = 0;
  std::uint64_t start_requested = 0;         // requested bytes live at the start
  std::uint64_t recorded_peak_reserved = 0;  // start_reserved + the segment events' running sum
  std::uint32_t recorded_peak_entry = 0;     // the entry that reached it (0 when at the start)
  // The driver's address order, inferred from the window's segment_alloc/segment_free calls.
  address_plan::inference driver_order;
  std::vector<model_note> notes;

  // The start's cudaMalloc segments and the window's cudaMalloc/cudaFree calls, in order.
  std::vector<driver_call> start_calls() const;
  std::vector<driver_call> window_calls() const;
  std::vector<std::uint64_t> range_bases() const;

  // The allocations live just before trace entry `entry` (entries() for the end).
  live_state live_at(std::uint32_t entry) const;

  // The memory this process could use, as the recording implies it: the budget at its last
  // OOM (mapped + the driver's free bytes); none when the trace records no OOM.
  std::optional<std::uint64_t> recorded_budget() const;
  // segment_alloc/segment_map events of the window, in order (what fidelity compares).
  std::vector<segment_event> recorded_growth() const;
};

// The devices that have trace entries or segments, ascending.
std::vector<int> devices_in(const snapshot& s);

// The allocator config recorded settings describe: their PYTORCH_CUDA_ALLOC_CONF read strictly,
// as `--conf` reads a PyTorch string, with the grammar the settings imply (grammar_for_settings)
// or, failing that, the other one; then the recorded values on top (they are what the
// allocator ran with; settings read from a file apply only the keys the file has). Throws
// keel::invalid_argument when no PyTorch grammar accepts the string.
allocator_config recorded_config(const allocator_settings& settings);
// The allocator settings a snapshot records (PyTorch's defaults when it records none).
allocator_config recorded_config(const snapshot& s);

// Builds the model for `device`. Throws keel::invalid_argument naming the place
// ("segments[3].blocks[2]: ...", "device_traces[0][17]: ...", "allocator_settings: ...") when
// the snapshot has neither segments nor trace entries for that device, or holds what
// read_snapshot refuses (a size above k_max_device_bytes, a range past the end of the address
// space, a block in use smaller than its request, settings no PyTorch accepts), or implies
// more than k_max_device_bytes reserved at once. What is odd but usable (the recorded string
// and values disagree, a small-pool segment that is not 2 MiB, unmerged free blocks, sizes
// PyTorch would refuse but that replay) becomes a note.
trace_model build_trace_model(const snapshot& s, int device);

}  // namespace keel::memory
