#include "keel/memory/memory_stats.hpp"

#include <string_view>

namespace keel::memory {

std::vector<std::pair<std::string, std::int64_t>> memory_stats::flatten() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  const auto add_stat = [&](std::string_view prefix, const stat& s) {
    out.emplace_back(std::string(prefix) + ".current", s.current);
    out.emplace_back(std::string(prefix) + ".peak", s.peak);
    out.emplace_back(std::string(prefix) + ".allocated", s.allocated);
    out.emplace_back(std::string(prefix) + ".freed", s.freed);
  };
  const auto add_array = [&](std::string_view name, const stat_array& a) {
    static constexpr std::array<std::string_view, 3> k_pools{"all", "small_pool", "large_pool"};
    for (std::size_t i = 0; i < 3; ++i)
      add_stat(std::string(name) + "." + std::string(k_pools[i]), a[i]);
  };
  add_array("allocation", allocation);
  add_array("segment", segment);
  add_array("active", active);
  add_array("inactive_split", inactive_split);
  add_array("allocated_bytes", allocated_bytes);
  add_array("reserved_bytes", reserved_bytes);
  add_array("active_bytes", active_bytes);
  add_array("inactive_split_bytes", inactive_split_bytes);
  add_array("requested_bytes", requested_bytes);
  out.emplace_back("num_alloc_retries", num_alloc_retries);
  out.emplace_back("num_ooms", num_ooms);
  out.emplace_back("num_sync_all_streams", num_sync_all_streams);
  out.emplace_back("num_device_alloc", num_device_alloc);
  out.emplace_back("num_device_free", num_device_free);
  out.emplace_back("max_split_size", max_split_size);
  add_stat("oversize_allocations", oversize_allocations);
  add_stat("oversize_segments", oversize_segments);
  return out;
}

}  // namespace keel::memory
