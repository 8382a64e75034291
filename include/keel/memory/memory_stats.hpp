// memory_stats — the caching allocator's counters, with torch.cuda.memory_stats()'s names and
// meaning.
//
// Each stat has current, peak, allocated (sum of increases) and freed (sum of decreases) for
// three pools: all, small_pool (blocks <= 1 MiB) and large_pool. allocation/active count
// blocks handed out / not yet returned to the pool (active includes blocks waiting for
// cross-stream frees); segment/reserved_bytes count device memory held; inactive_split counts
// free blocks inside partially used segments (memory that empty_cache cannot return);
// requested_bytes counts what the program asked for before rounding. flatten() gives the
// dotted names PyTorch prints, e.g. "allocated_bytes.all.peak". A plain value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keel::memory {

struct stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  void increase(std::int64_t amount) noexcept {
    current += amount;
    if (current > peak) peak = current;
    allocated += amount;
  }
  void decrease(std::int64_t amount) noexcept {
    current -= amount;
    freed += amount;
  }
  void reset_peak() noexcept { peak = current; }
  void reset_accumulated() noexcept { allocated = freed = 0; }
  bool operator==(const stat&) const = default;
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
