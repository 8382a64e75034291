// caching_allocator — a caching device-memory allocator with PyTorch's behaviour or keel's.
//
// The allocator keeps freed blocks cached per stream and hands them out again (best fit by
// (stream, size, address)), splitting and coalescing them inside segments obtained from a
// backend. Policy `pytorch` reproduces PyTorch's CUDA caching allocator rule for rule: small
// (<= 1 MiB) and large pools, round_size with roundup_power2_divisions, 2 MiB / 20 MiB /
// 2 MiB-rounded segments, should_split, max_split_size and max_non_split_rounding, garbage
// collection by block age, the retry order on device OOM (free-memory callbacks, GC,
// releasing oversize blocks, releasing every cached block), expandable segments with 2 MiB
// (small) and 20 MiB (large) pages, record_stream with deferred frees, empty_cache and a
// memory fraction. Policy `keel` always uses page-mapped segments with 2 MiB pages, keeps one
// pool per stream (small blocks fill the tails of large blocks' last pages, so its small_pool
// stats stay zero) and recycles whole free pages before it asks the device for more, so
// reserved memory follows the pages live blocks actually touch (docs/memory.md has the design
// and measurements).
//
// Thread-safety: every public function except the destructor may be called concurrently;
// one mutex, the allocator lock, serialises them. The lock contract:
// - User code never runs under the lock. Free-memory callbacks, the trace tracker and
//   out-of-memory observers are called with it released, so they may call any public
//   function of this allocator (a callback that frees a block or calls empty_cache() is the
//   natural use); only the destructor is off limits.
// - Free-memory callbacks run on the allocating thread, in registration order, when no cached
//   block fits; other threads may allocate and free meanwhile, and the cache is searched again
//   under the lock once they return.
// - Trace entries are delivered to the tracker one at a time (never concurrently), in the
//   order the allocator made them. A call's entries are delivered before it returns, unless
//   another call is delivering at that moment (it then delivers them, and this call may
//   return first) or the call was made by the tracker itself (delivered after the tracker
//   returns). An entry goes to the tracker attached when it was made.
// - Out-of-memory observers run on the failing thread before allocate() throws, after the
//   oom entry has been delivered (or handed to the call delivering at that moment); they may
//   run on several threads at once.
// - Trackers and observers must not throw: what they throw is logged and dropped. What a
//   free-memory callback throws propagates out of allocate(), the allocator intact.
// - The backend is called under the allocator lock, except the segment allocation when
//   release_lock_on_cudamalloc is set (PyTorch's rule), which runs with the allocator lock
//   released; a second lock taken only around backend calls keeps the backend serialised
//   (backends are not thread-safe). Mapping and unmapping pages of expandable segments stays
//   under the allocator lock: the pages' blocks are linked with free neighbours that a
//   concurrent free would coalesce with.
// Ownership: the allocator borrows its backend, which must outlive it; the destructor
// returns every segment (live blocks included) to the backend. allocate() throws
// keel::out_of_memory (a std::bad_alloc) with an explanation of where the memory is;
// deallocate() never throws. Addresses are device addresses as integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/memory_stats.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {

// PyTorch's constants.
inline constexpr std::size_t k_min_block_size = 512;
inline constexpr std::size_t k_small_size = 1u << 20;    // largest small-pool request
inline constexpr std::size_t k_small_buffer = 2u << 20;  // small-pool segment
inline constexpr std::size_t k_min_large_alloc = 10u << 20;
inline constexpr std::size_t k_round_large = 2u << 20;
inline constexpr std::size_t k_large_buffer = 20u << 20;  // segment for 1-10 MiB requests

// A segment as it already exists (a replay's starting state): blocks in address order that
// tile total_size; adjacent free blocks must already be merged. An expandable one is a run of
// mapped pages `range_offset` bytes into the virtual range numbered `range` (runs with one
// number share a range; ranges are reserved in order of first mention); an allocator without
// expandable segments imports it as a plain segment.
struct imported_block {
  std::size_t size = 0;
  std::size_t requested_size = 0;
  bool live = false;
};
struct imported_segment {
  std::size_t total_size = 0;
  stream_id stream = 0;
  bool is_small = false;
  bool expandable = false;
  std::size_t range = 0;
  std::size_t range_offset = 0;
  std::vector<imported_block> blocks;
};

// What the allocator holds right now, cheaply (no stats copy).
struct memory_usage {
  std::size_t reserved = 0;   // device memory held (segments and mapped pages)
  std::size_t allocated = 0;  // bytes in blocks handed out (rounded sizes)
  std::size_t requested = 0;  // bytes the program asked for in those blocks
};

// What an out-of-memory observer is told (PyTorch's OutOfMemoryObserver arguments, and the
// stream).
struct out_of_memory_info {
  int device = 0;
  std::size_t size = 0;          // the segment size that could not be obtained
  std::size_t device_total = 0;  // the device's capacity, or the memory fraction's cap when set
  std::size_t device_free = 0;   // what the backend reports free
  stream_id stream = 0;
};
using out_of_memory_observer = std::function<void(const out_of_memory_info&)>;

class caching_allocator {
 public:
  // `device` only labels snapshots and messages. The config is the caller's: a bare
  // caching_allocator(backend) has PyTorch's defaults and does not read the environment (pass
  // allocator_config::from_environment() for that).
  explicit caching_allocator(backend& device_backend, const allocator_config& config = {},
                             int device = 0);
  ~caching_allocator();
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;

  // Returns the address of at least `size` bytes usable on `stream`; size 0 returns 0 (a null
  // address, as PyTorch does). Throws keel::out_of_memory when even after every retry the
  // device cannot provide the memory, and at once (no retry, trace entry or stats change) for
  // a size above k_max_device_bytes. The allocator never holds more than k_max_device_bytes in
  // total, whatever the backend's capacity, so its stats cannot overflow.
  std::uint64_t allocate(std::size_t size, stream_id stream = 0);
  // Returns a block to the cache; with recorded streams it stays active until their work
  // completes. An address that is not live is ignored (and logged).
  void deallocate(std::uint64_t address) noexcept;
  // Marks the block as used on `stream` (PyTorch's Tensor.record_stream). Throws
  // keel::invalid_argument for an address that is not live.
  void record_stream(std::uint64_t address, stream_id stream);

  // Releases every cached block that is not split (and every whole free page of expandable
  // segments) back to the device, after waiting for pending cross-stream frees.
  void empty_cache();
  // Caps reserved memory at fraction * capacity. Throws invalid_argument unless 0 <= f <= 1.
  void set_memory_fraction(double fraction);
  // Called (in order, with the allocator lock released) when no cached block fits, before the
  // device is asked; return true when memory was freed (PyTorch's FreeMemoryCallback).
  void add_free_memory_callback(std::function<bool()> callback);
  // Called (in order of attachment, with the lock released) when allocate() is about to throw
  // out_of_memory (PyTorch's attachOutOfMemoryObserver).
  void attach_out_of_memory_observer(out_of_memory_observer observer);

  memory_stats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();

  // Records allocator events (alloc, free_requested, free_completed, segment_*, oom) into a
  // ring buffer of `max_entries` for take_snapshot().
  void record_history(bool enabled, std::size_t max_entries = 1u << 20);
  // Segments with their blocks, and this device's trace when recording.
  snapshot take_snapshot() const;

  const allocator_config& config() const noexcept;
  backend& device_backend() const noexcept;
  // PyTorch's round_size under this allocator's config (saturates at SIZE_MAX, never wraps).
  std::size_t round_size(std::size_t size) const noexcept;
  // PyTorch's segment size for a rounded request (get_allocation_size); saturates at SIZE_MAX.
  static std::size_t allocation_size(std::size_t rounded_size) noexcept;

  // Adopts pre-existing segments exactly as laid out, as if allocated before; returns the new
  // address of every live block, segment by segment in the order given. An expandable run
  // that is not whole pages of this allocator (2 MiB; PyTorch's large pool 20 MiB) is held as a
  // plain segment. Throws keel::out_of_memory when
  // the backend (or k_max_device_bytes) cannot hold them, keel::invalid_argument when blocks
  // do not tile their segment (an empty block, a sum other than total_size) or a live block's
  // requested_size exceeds its size.
  std::vector<std::uint64_t> import_segments(const std::vector<imported_segment>& segments);

  memory_usage usage() const;

  // Calls `tracker` with every allocator event (PyTorch's attachAllocatorTraceTracker), with
  // the lock released, in order, as the contract above says; an empty function detaches it.
  void attach_trace_tracker(std::function<void(const trace_entry&)> tracker);

  // Checks every internal invariant (blocks tile segments, pools agree with blocks, stats
  // equal values recomputed from scratch); returns "" or a description of the first
  // violation. O(blocks); for tests.
  std::string check_invariants() const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace keel::memory
