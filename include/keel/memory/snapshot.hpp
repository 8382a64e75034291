// snapshot — PyTorch's CUDA memory snapshot (torch.cuda.memory._snapshot()) as plain data.
//
// This is the structure `_dump_snapshot()` pickles and pytorch.org/memory_viz reads: the
// allocator's segments with their blocks, and per device a trace of allocator events (a ring
// buffer, so it may begin mid-run). keel reads every variant PyTorch has written since 2.0
// (2.0-era blocks with `history` and no `address` get their addresses from the running sum
// of block sizes), and writes the 2.2+ layout. Readers never execute anything: pickles are
// parsed by a restricted reader that refuses every opcode that could construct an object.
// Values are plain, copyable and immutable once read; functions are thread-safe.
//
// Stack traces repeat heavily (a 19k-event trace holds ~700k frames but ~300 distinct
// stacks), so `frames` is a frame_stack: an immutable, shared vector of frames. Copying one
// copies a pointer; the reader builds each distinct stack once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::memory {

namespace pickle {
class document;
}  // namespace pickle

struct frame {
  std::string filename;
  std::int64_t line = 0;
  std::string name;
  friend bool operator==(const frame&, const frame&) = default;
};

// An immutable call stack (innermost frame first, as PyTorch records it), shared between
// copies. Reads like a const std::vector<frame>.
class frame_stack {
 public:
  frame_stack() = default;
  frame_stack(std::vector<frame> frames)  // NOLINT(google-explicit-constructor)
      : frames_(frames.empty() ? nullptr
                               : std::make_shared<const std::vector<frame>>(std::move(frames))) {}
  frame_stack(std::initializer_list<frame> frames) : frame_stack(std::vector<frame>(frames)) {}

  const std::vector<frame>& vector() const noexcept { return frames_ ? *frames_ : no_frames(); }
  std::size_t size() const noexcept { return vector().size(); }
  bool empty() const noexcept { return size() == 0; }
  const frame& operator[](std::size_t i) const { return vector()[i]; }
  auto begin() const noexcept { return vector().begin(); }
  auto end() const noexcept { return vector().end(); }
  // True when both share one vector (cheap identity, used to write a stack once).
  const void* identity() const noexcept { return frames_.get(); }

  friend bool operator==(const frame_stack& a, const frame_stack& b) {
    return a.frames_ == b.frames_ || a.vector() == b.vector();
  }

 private:
  static const std::vector<frame>& no_frames() noexcept {
    static const std::vector<frame> none;
    return none;
  }
  std::shared_ptr<const std::vector<frame>> frames_;
};

enum class block_state { active_allocated, active_pending_free, inactive };

struct snapshot_block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;            // rounded size the allocator handed out
  std::uint64_t requested_size = 0;  // what the program asked for (0 when unknown)
  block_state state = block_state::inactive;
  frame_stack frames;
  friend bool operator==(const snapshot_block&, const snapshot_block&) = default;
};

struct snapshot_segment {
  int device = 0;
  std::uint64_t address = 0;
  std::uint64_t total_size = 0;
  std::uint64_t allocated_size = 0;
  std::uint64_t active_size = 0;
  std::uint64_t requested_size = 0;
  std::uint64_t stream = 0;  // raw cudaStream_t value; 0 is the default stream
  bool is_large = true;      // segment_type 'large' (true) or 'small'
  std::pair<std::int64_t, std::int64_t> pool_id{0, 0};
  bool is_expandable = false;
  std::vector<snapshot_block> blocks;  // in address order, covering the segment
  frame_stack frames;
  friend bool operator==(const snapshot_segment&, const snapshot_segment&) = default;
};

enum class trace_action {
  alloc,
  free_requested,
  free_completed,
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  snapshot,
  annotate,
};

struct trace_entry {
  trace_action action = trace_action::alloc;
  std::uint64_t addr = 0;  // block or segment address (0 for oom/snapshot)
  std::uint64_t size = 0;  // requested bytes for alloc/free_*, segment bytes for segment_*
  std::uint64_t stream = 0;
  std::optional<std::int64_t> time_us;
  std::uint64_t device_free = 0;  // oom: free device memory reported by the driver
  frame_stack frames;
  friend bool operator==(const trace_entry&, const trace_entry&) = default;
};

// The recorded allocator settings (2.2+ files); absent fields keep PyTorch's defaults.
struct allocator_settings {
  std::string conf;  // PYTORCH_CUDA_ALLOC_CONF as recorded
  bool expandable_segments = false;
  std::int64_t max_split_size = -1;  // bytes; -1 = unlimited
  double garbage_collection_threshold = 0.0;
  std::vector<std::int64_t> roundup_power2_divisions;  // one per power-of-two interval
  std::optional<std::int64_t> max_non_split_rounding_size;
  // The dict's keys as recorded, which tell the PyTorch version that wrote it (read only: the
  // writer writes its own keys, and equality ignores them).
  std::vector<std::string> keys;
  friend bool operator==(const allocator_settings& a, const allocator_settings& b) {
    return a.conf == b.conf && a.expandable_segments == b.expandable_segments &&
           a.max_split_size == b.max_split_size &&
           a.garbage_collection_threshold == b.garbage_collection_threshold &&
           a.roundup_power2_divisions == b.roundup_power2_divisions &&
           a.max_non_split_rounding_size == b.max_non_split_rounding_size;
  }
};

struct snapshot {
  std::vector<snapshot_segment> segments;
  std::vector<std::vector<trace_entry>> device_traces;  // index = device
  std::optional<allocator_settings> settings;
  // True when the file was the plain segment list of torch.cuda.memory_snapshot().
  bool segments_only = false;
  friend bool operator==(const snapshot&, const snapshot&) = default;
};

std::string_view to_string(trace_action action) noexcept;
std::string_view to_string(block_state state) noexcept;
// The action a trace entry's name means (to_string's names, and "annotate" for user_defined);
// nullopt for a name PyTorch does not write.
std::optional<trace_action> trace_action_named(std::string_view name) noexcept;

// Reads a snapshot file, pickle or JSON (told apart by content), through read_input_file
// (keel/core/input_file.hpp: a regular file only, at most KEEL_MAX_INPUT_BYTES). Throws
// keel::io_error when the file cannot be read and keel::parse_error (with the byte offset or
// line:column, and the place in the structure, e.g. "segments[3].blocks[2]") when it is not a
// snapshot. Unknown keys are ignored; an unknown trace action or block state is an error. Pickles
// go through pickle::parse (include/keel/memory/pickle.hpp) with its default limits.
//
// Storage grows in proportion to the input: the pickle's memo can make one dict appear many
// times, and the typed snapshot would hold a copy per appearance, so the conversion has a
// materialisation budget of 4 units per value or container slot of the document
// (pickle::document::node_count() + slot_count()) plus 65,536. A unit is one segment, block,
// device trace or trace entry, one frame copied into a newly built stack, or 64 bytes of
// string copied; a stack seen before (by node or by content) is shared and costs nothing, so
// real traces (~700k frames on ~300 stacks) use a few percent of it. Past the budget the
// reader throws a parse_error that names it.
//
// What a snapshot says must be possible for the numbers computed from it to mean anything,
// so these are parse errors too, naming the place: a size above k_max_device_bytes (2^62,
// backend.hpp); a range past the end of the address space; a segment of 0 bytes, or blocks
// that do not tile their segment (each starts where the one before ends, none is empty,
// together they cover it exactly); segments of one device that overlap; a block in use
// (active_allocated, active_pending_free) whose requested_size exceeds its size; recorded
// settings outside what PyTorch accepts: garbage_collection_threshold outside [0, 1),
// roundup_power2_divisions other than 0 or powers of two, max_split_size other than -1 or a
// size, and a PYTORCH_CUDA_ALLOC_CONF that no PyTorch grammar reads (allocator_config's
// parse_pytorch, as `--conf` reads it). What is only odd is kept and noted by
// build_trace_model (trace_model.hpp).
snapshot read_snapshot(const std::string& path);
snapshot parse_snapshot_pickle(std::span<const std::byte> bytes, std::string_view source);
snapshot parse_snapshot_json(std::string_view text, std::string_view source);
// The snapshot a document holds (one a program built with pickle::document_builder); the same
// checks and errors as the readers above.
snapshot snapshot_from_document(const pickle::document& doc);

// Writes the 2.2+ layout: as a protocol-4 pickle that Python's standard unpickler and
// torch.cuda._memory_viz load, or as JSON with the same keys (tuples become lists).
// allocator_settings is written when `settings` is set; a segments_only snapshot is written
// as the plain segment list (its traces and settings are not written). Throws io_error when
// the stream fails, invalid_argument (JSON only) for a non-finite number.
void write_snapshot_pickle(const snapshot& s, std::ostream& out);
void write_snapshot_json(const snapshot& s, std::ostream& out);

}  // namespace keel::memory
