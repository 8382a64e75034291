// What the allocator shows of itself: take_snapshot (segments, blocks, the trace ring) and
// check_invariants (a recount of everything from the blocks).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "allocator_impl.hpp"

namespace keel::memory {

snapshot caching_allocator::impl::take_snapshot() const {
  std::lock_guard lock(mutex_);
  snapshot out;
  std::vector<block*> blocks = all_blocks();
  std::vector<block*> heads;
  for (block* b : blocks) {
    if (b->prev == nullptr) heads.push_back(b);
  }
  const auto emit = [&](const block* first, const block* stop) {
    snapshot_segment seg;
    seg.device = device_index_;
    seg.address = first->ptr;
    seg.stream = first->stream;
    seg.is_large = !first->pool->is_small;
    seg.is_expandable = first->expandable != nullptr;
    for (const block* b = first; b != stop; b = b->next) {
      snapshot_block sb;
      sb.address = b->ptr;
      sb.size = b->size;
      const bool pending = b->event_count > 0 || !b->stream_uses.empty();
      sb.state = b->allocated ? block_state::active_allocated
                 : pending    ? block_state::active_pending_free
                              : block_state::inactive;
      sb.requested_size = sb.state == block_state::inactive ? 0 : b->requested_size;
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size;
      if (sb.state != block_state::inactive) {
        seg.active_size += b->size;
        seg.requested_size += b->requested_size;
      }
      seg.blocks.push_back(std::move(sb));
    }
    out.segments.push_back(std::move(seg));
  };
  for (const block* head : heads) {
    if (head->expandable == nullptr) {
      emit(head, nullptr);
      continue;
    }
    // An expandable segment is reported as its runs of mapped blocks.
    const block* b = head;
    while (b != nullptr) {
      while (b != nullptr && !b->mapped) b = b->next;
      if (b == nullptr) break;
      const block* end = b;
      while (end != nullptr && end->mapped) end = end->next;
      emit(b, end);
      b = end;
    }
  }
  std::sort(
      out.segments.begin(), out.segments.end(),
      [](const snapshot_segment& a, const snapshot_segment& b) { return a.address < b.address; });
  out.device_traces.resize(static_cast<std::size_t>(device_index_) + 1);
  out.device_traces[static_cast<std::size_t>(device_index_)] = ring_.entries();
  allocator_settings settings;
  settings.conf = config_.pytorch_string();  // PyTorch's string: no keel-only key
  settings.expandable_segments = config_.expandable_segments;
  settings.max_split_size = stats_.view().max_split_size;
  settings.garbage_collection_threshold = config_.garbage_collection_threshold;
  settings.roundup_power2_divisions.assign(config_.roundup_power2_divisions.begin(),
                                           config_.roundup_power2_divisions.end());
  settings.max_non_split_rounding_size =
      static_cast<std::int64_t>(config_.max_non_split_rounding_size);
  out.settings = settings;
  return out;
}

// ---- invariants ----

std::string caching_allocator::impl::check_invariants() const {
  std::lock_guard lock(mutex_);
  std::vector<block*> blocks = all_blocks();
  std::array<std::int64_t, 3> allocated{}, allocated_n{}, active{}, active_n{}, requested{},
      reserved{}, segments{}, split{}, split_n{};
  const auto add = [](std::array<std::int64_t, 3>& a, const block_pool* pool, std::int64_t v) {
    a[k_all] += v;
    a[pool->is_small ? k_small_pool : k_large_pool] += v;
  };
  std::unordered_map<const expandable_segment*, std::size_t> mapped_blocks;  // bytes
  for (block* b : blocks) {
    if (b->prev != nullptr && b->prev->next != b)
      return fmt::format("block {:#x}: prev link broken", b->ptr);
    if (b->next != nullptr && b->next->prev != b)
      return fmt::format("block {:#x}: next link broken", b->ptr);
    if (b->next != nullptr && b->ptr + b->size != b->next->ptr) {
      return fmt::format("block {:#x}+{} does not end where the next one starts", b->ptr, b->size);
    }
    const bool in_free = b->pool->blocks.count(b) != 0;
    const bool in_unmapped = b->pool->unmapped.count(b) != 0;
    const bool pending = b->event_count > 0;
    if (b->allocated && (in_free || in_unmapped))
      return fmt::format("live block {:#x} is in a pool", b->ptr);
    if (!b->allocated && !pending && b->mapped && !in_free) {
      return fmt::format("free block {:#x} is missing from its pool", b->ptr);
    }
    if (!b->mapped && !in_unmapped) return fmt::format("unmapped block {:#x} is missing", b->ptr);
    if (!b->allocated && !pending && b->mapped) {
      for (block* n : {b->prev, b->next}) {
        if (n != nullptr && !n->allocated && n->event_count == 0 && n->mapped) {
          return fmt::format("free blocks {:#x} and {:#x} were not coalesced", b->ptr, n->ptr);
        }
      }
    }
    if (b->size == 0) return fmt::format("block {:#x} is empty", b->ptr);
    if (b->allocated && b->requested_size > b->size) {
      return fmt::format("live block {:#x} of {} bytes holds a request of {}", b->ptr, b->size,
                         b->requested_size);
    }
    if (b->allocated) {
      add(allocated, b->pool, static_cast<std::int64_t>(b->size));
      add(allocated_n, b->pool, 1);
    }
    if (b->allocated || pending) {
      add(active, b->pool, static_cast<std::int64_t>(b->size));
      add(active_n, b->pool, 1);
      add(requested, b->pool, static_cast<std::int64_t>(b->requested_size));
    }
    if (b->expandable == nullptr) {
      if (b->prev == nullptr) add(segments, b->pool, 1);
      add(reserved, b->pool, static_cast<std::int64_t>(b->size));
      if (!b->allocated && !pending && b->is_split()) {
        add(split, b->pool, static_cast<std::int64_t>(b->size));
        add(split_n, b->pool, 1);
      }
    } else if (b->mapped) {
      add(reserved, b->pool, static_cast<std::int64_t>(b->size));
      mapped_blocks[b->expandable] += b->size;
    }
  }
  // Each range's mapped pages are exactly its mapped blocks.
  for (const auto& es : segments_) {
    const auto it = mapped_blocks.find(es.get());
    const std::size_t in_blocks = it == mapped_blocks.end() ? 0 : it->second;
    if (in_blocks != es->mapped_bytes()) {
      return fmt::format("range {:#x} has {} bytes mapped but its mapped blocks hold {}",
                         es->base(), es->mapped_bytes(), in_blocks);
    }
  }
  const memory_stats& stats = stats_.view();
  const auto check = [](std::string_view name, const stat_array& s,
                        const std::array<std::int64_t, 3>& want) -> std::string {
    for (std::size_t t = 0; t < 3; ++t) {
      if (s[t].current != want[t]) {
        return fmt::format("{}[{}].current is {} but the blocks say {}", name, t, s[t].current,
                           want[t]);
      }
    }
    return {};
  };
  for (auto [name, s, want] :
       {std::tuple{"allocated_bytes", &stats.allocated_bytes, &allocated},
        std::tuple{"allocation", &stats.allocation, &allocated_n},
        std::tuple{"active_bytes", &stats.active_bytes, &active},
        std::tuple{"active", &stats.active, &active_n},
        std::tuple{"requested_bytes", &stats.requested_bytes, &requested},
        std::tuple{"reserved_bytes", &stats.reserved_bytes, &reserved},
        std::tuple{"segment", &stats.segment, &segments},
        std::tuple{"inactive_split_bytes", &stats.inactive_split_bytes, &split},
        std::tuple{"inactive_split", &stats.inactive_split, &split_n}}) {
    std::string e = check(name, *s, *want);
    if (!e.empty()) return e;
  }
  if (total_allocated_memory_ > k_max_device_bytes) {
    return fmt::format("reserved {} is above k_max_device_bytes", total_allocated_memory_);
  }
  if (static_cast<std::int64_t>(total_allocated_memory_) != reserved[k_all]) {
    return fmt::format("total_allocated_memory {} != reserved {}", total_allocated_memory_,
                       reserved[k_all]);
  }
  return {};
}

}  // namespace keel::memory
