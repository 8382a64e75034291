// caching_allocator::impl — the allocator's state and its operations (internal).
//
// The structure follows PyTorch's DeviceCachingAllocator closely on purpose: policy `pytorch`
// must make the same decisions in the same order, so that replays of recorded traces
// reproduce PyTorch's segment sequence exactly. The parts live in their own files:
//   caching_allocator.cpp  the public operations, the lock and what runs outside it
//   malloc_path.cpp        best fit, segments, splitting, the retry order, freeing, coalescing
//   expandable_path.cpp    blocks of expandable segments: growing by mapping, unmapping pages
//   import.cpp             import_segments (a replay's starting state)
//   oom_message.cpp        the out-of-memory explanation
//   inspect.cpp            take_snapshot and check_invariants
// with the mechanisms they use in block.hpp, expandable_segment.hpp, stream_events.hpp,
// trace_ring.hpp, allocator_stats.hpp, pool_policy.hpp and locked_backend.hpp.
//
// Locking: mutex_ guards every member below it. Functions taking a `lock_type&` are entered
// with it held and may release it for a while (they return with it held); every other private
// function runs under it throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocator_stats.hpp"
#include "block.hpp"
#include "expandable_segment.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "locked_backend.hpp"
#include "pool_policy.hpp"
#include "stream_events.hpp"
#include "trace_ring.hpp"

namespace keel::memory {

// fraction * bytes as a size, saturating (a double at or above 2^64 does not convert).
inline std::size_t scaled(double fraction, std::size_t bytes) {
  const double v = fraction * static_cast<double>(bytes);
  if (!(v > 0.0)) return 0;
  if (v >= 18446744073709551616.0) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(v);
}

class caching_allocator::impl {
 public:
  using block = detail::block;
  using block_pool = detail::block_pool;
  using alloc_params = detail::alloc_params;
  using expandable_segment = detail::expandable_segment;
  using lock_type = std::unique_lock<std::mutex>;
  using free_memory_callback = std::function<bool()>;
  using trace_tracker = std::function<void(const trace_entry&)>;

  impl(backend& b, const allocator_config& config, int device);
  ~impl();

  // ---- public operations (caching_allocator.cpp; each takes the lock) ----
  std::uint64_t allocate(std::size_t orig_size, stream_id stream);
  void deallocate(std::uint64_t address) noexcept;
  void record_stream(std::uint64_t address, stream_id stream);
  void empty_cache();
  void set_memory_fraction(double fraction);
  void add_free_memory_callback(free_memory_callback callback);
  void attach_out_of_memory_observer(out_of_memory_observer observer);
  void attach_trace_tracker(trace_tracker tracker);
  memory_stats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  void record_history(bool enabled, std::size_t max_entries);
  memory_usage usage() const;
  std::vector<std::uint64_t> import_segments(const std::vector<imported_segment>& segments);
  snapshot take_snapshot() const;
  std::string check_invariants() const;

  std::size_t round_size(std::size_t size) const noexcept { return config_.round_size(size); }
  const allocator_config& config() const noexcept { return config_; }
  backend& device_backend() const noexcept { return device_.unlocked(); }

 private:
  struct tracked_entry {
    std::shared_ptr<const trace_tracker> tracker;
    trace_entry entry;
  };
  class delivery;

  // ---- outside the lock (caching_allocator.cpp) ----
  // Runs the free-memory callbacks with the lock released; true when one freed memory.
  bool run_free_memory_callbacks(lock_type& lock);
  // Hands the queued trace entries to their trackers with the lock released, unless another
  // call (on any thread) is doing so already; it then delivers them.
  void deliver_trace(lock_type& lock) noexcept;

  // ---- the malloc path and freeing (malloc_path.cpp) ----
  bool get_free_block(alloc_params& p);
  bool should_split(const block* b, std::size_t size) const noexcept;
  void garbage_collect_cached_blocks();
  bool alloc_block(alloc_params& p, bool is_retry, lock_type& lock);
  std::optional<std::uint64_t> allocate_segment(std::size_t size, lock_type& lock);
  bool release_available_cached_blocks(const alloc_params& p);
  bool release_cached_blocks();
  void release_blocks(block_pool& pool);
  void release_block(block* b);
  std::uint64_t alloc_found_block(const alloc_params& p, std::size_t orig_size, bool split);
  void free_block(block* b);
  std::size_t try_merge_blocks(block* dst, block* src, block_pool& pool);

  // ---- expandable segments (expandable_path.cpp) ----
  std::size_t page_size_for(const block_pool& pool) const noexcept;
  std::size_t range_pages(std::size_t page) const noexcept;
  std::size_t map_range(expandable_segment& es, std::uint64_t ptr, std::size_t size);
  block* find_expandable_block(stream_id stream, block_pool* pool, std::size_t size);
  bool map_block(block* to_map, std::size_t size);
  block* try_allocate_expandable_block(stream_id stream, block_pool* pool, std::size_t size);
  void recycle_free_pages(std::size_t bytes);
  std::size_t unmap_block(block* b);
  void release_expandable_segment(block* b);

  // ---- the starting state (import.cpp) ----
  void import_range(const std::vector<imported_segment>& segments,
                    std::vector<std::size_t>& indices,
                    std::vector<std::vector<std::uint64_t>>& live);
  void import_blocks(const imported_segment& seg, block_pool& pool, std::uint64_t ptr,
                     expandable_segment* es, bool split, block*& prev,
                     std::vector<std::uint64_t>& live_addresses);
  [[noreturn]] void throw_start_does_not_fit(std::size_t bytes) const;

  // ---- out of memory (oom_message.cpp) ----
  // Records the oom event, counts it and returns the explanation.
  std::string out_of_memory_message(const alloc_params& p, std::size_t orig_size);

  // ---- helpers (caching_allocator.cpp) ----
  block* new_block(stream_id stream, std::size_t size, block_pool* pool, std::uint64_t ptr);
  void delete_block(block* b) noexcept;
  void record(trace_action action, std::uint64_t addr, std::size_t size, stream_id stream,
              std::uint64_t device_free = 0);
  block_pool& pool_for(bool small) noexcept { return small ? small_ : large_; }
  std::vector<block*> all_blocks() const;
  static std::uint64_t segment_start(const block* b) noexcept {
    while (b->prev != nullptr) b = b->prev;
    return b->ptr;
  }

  detail::locked_backend device_;
  const allocator_config config_;
  const int device_index_;
  const std::unique_ptr<detail::pool_policy> policy_;
  bool expandable_ = false;

  mutable std::mutex mutex_;
  detail::allocator_stats stats_;
  std::pmr::unsynchronized_pool_resource nodes_;
  block_pool large_;
  block_pool small_;
  std::unordered_map<std::uint64_t, block*> live_;
  detail::stream_events events_;
  std::size_t total_allocated_memory_ = 0;
  // Bytes of segments being allocated with the lock released (release_lock_on_cudamalloc),
  // counted against the caps until they arrive.
  std::size_t in_flight_ = 0;
  std::size_t allowed_memory_maximum_ = 0;
  bool set_fraction_ = false;
  std::vector<std::unique_ptr<expandable_segment>> segments_;
  std::vector<block*> spare_blocks_;
  // Copied on write, so that a call outside the lock runs a stable list.
  std::shared_ptr<const std::vector<free_memory_callback>> callbacks_;
  std::shared_ptr<const std::vector<out_of_memory_observer>> oom_observers_;
  std::shared_ptr<const trace_tracker> tracker_;
  std::vector<tracked_entry> undelivered_;
  bool delivering_ = false;
  detail::trace_ring ring_;

  friend class caching_allocator;
};

}  // namespace keel::memory
