// allocator_stats — memory_stats changed only through named transitions (internal).
//
// Every change of the caching allocator's counters is one of the events below, applied to
// the pool's stats and to "all" at once, so that a transition cannot update one and forget
// the other, and a decrease that would go below zero aborts in debug builds (stat::decrease's
// KEEL_DCHECK). Not thread-safe: the allocator keeps it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block.hpp"
#include "keel/memory/memory_stats.hpp"

namespace keel::memory::detail {

class allocator_stats {
 public:
  explicit allocator_stats(std::size_t max_split_size);

  const memory_stats& view() const noexcept { return stats_; }

  // A plain segment: allocated from the device, or adopted by import_segments.
  void segment_allocated(const block_pool& pool, std::size_t bytes) noexcept;
  void segment_imported(const block_pool& pool, std::size_t bytes) noexcept;
  void segment_released(const block_pool& pool, std::size_t bytes) noexcept;
  // Pages of an expandable segment: mapped on demand, or adopted by import_segments.
  void pages_mapped(const block_pool& pool, std::size_t bytes) noexcept;
  void pages_imported(const block_pool& pool, std::size_t bytes) noexcept;
  void pages_unmapped(const block_pool& pool, std::size_t bytes) noexcept;
  // A block handed out for `requested` bytes; deallocated by the program; back in its pool
  // (after every stream that used it is done).
  void block_allocated(const block_pool& pool, std::size_t bytes, std::size_t requested) noexcept;
  void block_deallocated(const block_pool& pool, std::size_t bytes) noexcept;
  void block_deactivated(const block_pool& pool, std::size_t bytes, std::size_t requested) noexcept;
  // Free blocks inside partially used plain segments, by their change.
  void inactive_split_changed(const block_pool& pool, std::int64_t blocks,
                              std::int64_t bytes) noexcept;

  void alloc_retried() noexcept { ++stats_.num_alloc_retries; }
  void out_of_memory() noexcept { ++stats_.num_ooms; }
  void streams_synchronized() noexcept { ++stats_.num_sync_all_streams; }

  void reset_peak() noexcept;
  void reset_accumulated() noexcept;

 private:
  template <class F>
  static void for_pool(const block_pool& pool, F f) {
    f(k_all);
    f(pool.is_small ? k_small_pool : k_large_pool);
  }
  template <class F>
  void for_each_stat(F f);
  bool oversize(std::size_t bytes) const noexcept { return bytes >= max_split_size_; }

  memory_stats stats_;
  std::size_t max_split_size_;
};

}  // namespace keel::memory::detail
