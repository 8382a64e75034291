// The out-of-memory explanation: PyTorch's message, then where the reserved but unallocated
// memory is (each pool described as `keel mem explain` describes it, blocks waiting for other
// streams) and which setting would have served the request from the current state.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "allocator_impl.hpp"
#include "keel/core/bytes.hpp"
#include "keel/memory/pool_summary.hpp"

namespace keel::memory {

std::string caching_allocator::impl::out_of_memory_message(const alloc_params& p,
                                                           std::size_t orig_size) {
  const std::size_t device_free = device_.free_bytes();
  const std::size_t total = device_.capacity();
  // A simulated device of unlimited capacity reports nearly 2^64 bytes free; the trace keeps
  // what a snapshot may hold.
  record(trace_action::oom, 0, p.size, p.stream, std::min(device_free, k_max_device_bytes));
  stats_.out_of_memory();
  const memory_stats& stats = stats_.view();
  const auto allocated = static_cast<std::size_t>(stats.allocated_bytes[k_all].current);
  const auto reserved = static_cast<std::size_t>(stats.reserved_bytes[k_all].current);

  std::string message = fmt::format(
      "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is "
      "free. {}Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch "
      "but unallocated.",
      format_size(p.alloc_size), device_index_, format_size(total), format_size(device_free),
      set_fraction_ ? format_size(allowed_memory_maximum_) + " allowed; " : "",
      format_size(allocated), format_size(reserved - allocated));

  // Where the reserved-but-unallocated memory is, per pool.
  std::size_t whole_pages_2m = 0;   // free bytes in whole 2 MiB pages (keel's recycling)
  std::size_t whole_pages_20m = 0;  // ... in whole 20 MiB pages (PyTorch's expandable pages)
  for (const block_pool* pool : {&large_, &small_}) {
    const std::size_t which = pool->is_small ? k_small_pool : k_large_pool;
    pool_summary summary;
    summary.small = pool->is_small;
    summary.segments = static_cast<std::size_t>(stats.segment[which].current);
    summary.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[which].current);
    summary.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[which].current);
    for (const block* b : pool->blocks) {
      add_free_fragment(summary, b->size);
      for (std::size_t page : {k_small_buffer, k_large_buffer}) {
        const std::uint64_t origin =
            b->expandable != nullptr ? b->expandable->base() : segment_start(b);
        const std::uint64_t first = detail::round_up(b->ptr - origin, page);
        const std::uint64_t last = (b->ptr - origin + b->size) / page * page;
        const std::size_t whole = last > first ? last - first : 0;
        (page == k_small_buffer ? whole_pages_2m : whole_pages_20m) += whole;
      }
    }
    message += " " + describe(summary);
  }
  std::size_t pending = 0;
  events_.for_each_waiting([&](const block* b) { pending += b->size; });
  message +=
      fmt::format(" {} is held by blocks waiting for cross-stream frees.", format_size(pending));
  message += " empty_cache() was already tried and returned every unsplit cached segment.";

  // What would have served this request from the current state (sums saturate: a device of
  // "unlimited" capacity reports nearly 2^64 bytes free).
  const std::size_t need = p.size;
  const auto plus = [](std::size_t a, std::size_t b) {
    return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max()
                                                           : a + b;
  };
  std::vector<std::string> would;
  if (!expandable_) {
    if (plus(device_free, whole_pages_20m) >= need) {
      would.push_back(
          fmt::format("expandable_segments:True (its 20 MiB pages could reuse {} of the "
                      "free cached memory)",
                      format_size(whole_pages_20m)));
    }
  }
  if (!policy_->recycles_free_pages() && plus(device_free, whole_pages_2m) >= need) {
    would.push_back(
        fmt::format("policy:keel (its 2 MiB page recycling could reuse {} of the free "
                    "cached memory)",
                    format_size(whole_pages_2m)));
  }
  if (would.empty()) {
    message += fmt::format(
        " No allocator setting can serve {} now: free device memory plus every whole free page "
        "({}) is less than the request; less memory must be live.",
        format_size(orig_size), format_size(plus(device_free, whole_pages_2m)));
  } else {
    message +=
        fmt::format(" This request would have been served with {}.", fmt::join(would, " or "));
  }
  return message;
}

}  // namespace keel::memory
