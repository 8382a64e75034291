#include "allocator_stats.hpp"

#include <algorithm>

#include "keel/memory/allocator_config.hpp"
#include "keel/memory/backend.hpp"

namespace keel::memory::detail {
namespace {

std::int64_t signed_bytes(std::size_t bytes) noexcept { return static_cast<std::int64_t>(bytes); }

void change(stat& s, std::int64_t delta) noexcept {
  if (delta > 0) s.increase(delta);
  if (delta < 0) s.decrease(-delta);
}

}  // namespace

allocator_stats::allocator_stats(std::size_t max_split_size) : max_split_size_(max_split_size) {
  stats_.max_split_size =
      max_split_size == allocator_config::k_unlimited
          ? -1
          : static_cast<std::int64_t>(std::min(max_split_size, k_max_device_bytes));
}

void allocator_stats::segment_allocated(const block_pool& pool, std::size_t bytes) noexcept {
  segment_imported(pool, bytes);
  ++stats_.num_device_alloc;
}

void allocator_stats::segment_imported(const block_pool& pool, std::size_t bytes) noexcept {
  for_pool(pool, [&](std::size_t t) {
    stats_.segment[t].increase(1);
    stats_.reserved_bytes[t].increase(signed_bytes(bytes));
  });
  if (oversize(bytes)) stats_.oversize_segments.increase(1);
}

void allocator_stats::segment_released(const block_pool& pool, std::size_t bytes) noexcept {
  ++stats_.num_device_free;
  for_pool(pool, [&](std::size_t t) {
    stats_.segment[t].decrease(1);
    stats_.reserved_bytes[t].decrease(signed_bytes(bytes));
  });
  if (oversize(bytes)) stats_.oversize_segments.decrease(1);
}

void allocator_stats::pages_mapped(const block_pool& pool, std::size_t bytes) noexcept {
  pages_imported(pool, bytes);
  ++stats_.num_device_alloc;
}

void allocator_stats::pages_imported(const block_pool& pool, std::size_t bytes) noexcept {
  for_pool(pool, [&](std::size_t t) { stats_.reserved_bytes[t].increase(signed_bytes(bytes)); });
}

void allocator_stats::pages_unmapped(const block_pool& pool, std::size_t bytes) noexcept {
  for_pool(pool, [&](std::size_t t) { stats_.reserved_bytes[t].decrease(signed_bytes(bytes)); });
  ++stats_.num_device_free;
}

void allocator_stats::block_allocated(const block_pool& pool, std::size_t bytes,
                                      std::size_t requested) noexcept {
  for_pool(pool, [&](std::size_t t) {
    stats_.allocation[t].increase(1);
    stats_.allocated_bytes[t].increase(signed_bytes(bytes));
    stats_.active[t].increase(1);
    stats_.active_bytes[t].increase(signed_bytes(bytes));
    stats_.requested_bytes[t].increase(signed_bytes(requested));
  });
  if (oversize(bytes)) stats_.oversize_allocations.increase(1);
}

void allocator_stats::block_deallocated(const block_pool& pool, std::size_t bytes) noexcept {
  for_pool(pool, [&](std::size_t t) {
    stats_.allocation[t].decrease(1);
    stats_.allocated_bytes[t].decrease(signed_bytes(bytes));
  });
  if (oversize(bytes)) stats_.oversize_allocations.decrease(1);
}

void allocator_stats::block_deactivated(const block_pool& pool, std::size_t bytes,
                                        std::size_t requested) noexcept {
  for_pool(pool, [&](std::size_t t) {
    stats_.active[t].decrease(1);
    stats_.active_bytes[t].decrease(signed_bytes(bytes));
    stats_.requested_bytes[t].decrease(signed_bytes(requested));
  });
}

void allocator_stats::inactive_split_changed(const block_pool& pool, std::int64_t blocks,
                                             std::int64_t bytes) noexcept {
  for_pool(pool, [&](std::size_t t) {
    change(stats_.inactive_split[t], blocks);
    change(stats_.inactive_split_bytes[t], bytes);
  });
}

template <class F>
void allocator_stats::for_each_stat(F f) {
  for (stat_array* a : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
                        &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                        &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (stat& s : *a) f(s);
  }
  f(stats_.oversize_allocations);
  f(stats_.oversize_segments);
}

void allocator_stats::reset_peak() noexcept {
  for_each_stat([](stat& s) { s.reset_peak(); });
}

void allocator_stats::reset_accumulated() noexcept {
  for_each_stat([](stat& s) { s.reset_accumulated(); });
  stats_.num_alloc_retries = stats_.num_ooms = stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = stats_.num_device_free = 0;
}

}  // namespace keel::memory::detail
