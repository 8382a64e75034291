// memory_stats — the caching allocator's counters, with torch.cuda.memory_stats()'s names and
// meaning.
//
// Each stat has current, peak, allocated (sum of increases) and freed (sum of decreases) for
// three pools: all, small_pool (blocks <= 1 MiB) and large_pool. allocation/active count
// blocks handed out / not yet returned to the pool (active includes blocks waiting for
// cross-stream frees); segment/reserved_bytes count device memory held; inactive_split counts
// free blocks inside partially used segments (memory that empty_cache cannot return);
// requested_bytes counts what the program asked for before rounding. flatten() gives the
// dotted names PyTorch prints, e.g. "allocated_bytes.all.peak". Counters never wrap: current
// stays in [0, INT64_MAX] and the running sums saturate at INT64_MAX. A plain value.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "keel/core/check.hpp"

namespace keel::memory {

struct stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  // Amounts are never negative; current never exceeds INT64_MAX nor goes below zero (the
  // allocator holds at most k_max_device_bytes). The sums saturate at INT64_MAX instead of
  // wrapping; in debug builds KEEL_DCHECK aborts on a negative amount or a current that
  // would leave [0, INT64_MAX].
  void increase(std::int64_t amount) noexcept {
    KEEL_DCHECK(amount >= 0, "stat increase by a negative amount {}", amount);
    KEEL_DCHECK(amount <= std::numeric_limits<std::int64_t>::max() - current,
                "stat overflows: {} + {}", current, amount);
    current = saturating_add(current, amount);
    if (current > peak) peak = current;
    allocated = saturating_add(allocated, amount);
  }
  void decrease(std::int64_t amount) noexcept {
    KEEL_DCHECK(amount >= 0, "stat decrease by a negative amount {}", amount);
    KEEL_DCHECK(amount <= current, "stat goes below zero: {} - {}", current, amount);
    std::int64_t left = 0;
    if (__builtin_sub_overflow(current, amount, &left))
      left = std::numeric_limits<std::int64_t>::max();
    current = left < 0 ? 0 : left;
    freed = saturating_add(freed, amount);
  }
  void reset_peak() noexcept { peak = current; }
  void reset_accumulated() noexcept { allocated = freed = 0; }
  bool operator==(const stat&) const = default;

 private:
  static std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) {
      return b > 0 ? std::numeric_limits<std::int64_t>::max()
                   : std::numeric_limits<std::int64_t>::min();
    }
    return sum;
  }
};

enum stat_pool : std::size_t { k_all = 0, k_small_pool = 1, k_large_pool = 2 };
using stat_array = std::array<stat, 3>;

struct memory_stats {
  stat_array allocation{};
  stat_array segment{};
  stat_array active{};
  stat_array inactive_split{};
  stat_array allocated_bytes{};
  stat_array reserved_bytes{};
  stat_array active_bytes{};
  stat_array inactive_split_bytes{};
  stat_array requested_bytes{};
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  std::int64_t num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;
  std::int64_t max_split_size = -1;
  stat oversize_allocations;
  stat oversize_segments;

  // ("allocated_bytes.all.current", value), ... in PyTorch's order.
  std::vector<std::pair<std::string, std::int64_t>> flatten() const;
  bool operator==(const memory_stats&) const = default;
};

}  // namespace keel::memory
