// Blocks of expandable segments: finding room in a virtual range, growing a block by mapping
// the pages after it, giving whole free pages back, and (keel's policy) recycling free pages
// before the device is asked for more. The ranges and their pages are expandable_segment's;
// this file keeps the blocks, pools and stats in step with them. Runs under the allocator
// lock: a block being mapped or unmapped is linked with free neighbours that a concurrent
// free would merge with.
#include <algorithm>

#include "allocator_impl.hpp"
#include "keel/core/check.hpp"

namespace keel::memory {

std::size_t caching_allocator::impl::page_size_for(const block_pool& pool) const noexcept {
  return detail::round_up(policy_->page_size(pool.is_small), device_.page_granularity());
}

// PyTorch reserves 1.125 x the device's memory per range (capped at 1 TiB of memory here).
std::size_t caching_allocator::impl::range_pages(std::size_t page) const noexcept {
  const std::size_t device_memory = std::min<std::size_t>(device_.capacity(), std::size_t{1} << 40);
  return (device_memory + device_memory / 8 + page - 1) / page;
}

// Maps the pages covering [ptr, ptr + size) of `es`; returns the mapped range's size (0 when
// the device, or k_max_device_bytes, is out of memory).
std::size_t caching_allocator::impl::map_range(expandable_segment& es, std::uint64_t ptr,
                                               std::size_t size) {
  const std::size_t bytes = es.map_extent(ptr, size);
  if (bytes == 0 || bytes > k_max_device_bytes - total_allocated_memory_ - in_flight_) return 0;
  return es.map(ptr, size);
}

caching_allocator::impl::block* caching_allocator::impl::find_expandable_block(stream_id stream,
                                                                               block_pool* pool,
                                                                               std::size_t size) {
  block key;
  key.stream = stream;
  const auto has_space = [&](block* b) {
    std::size_t bytes = 0;
    while (bytes < size && b != nullptr && b->is_free()) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  for (auto it = pool->unmapped.lower_bound(&key);
       it != pool->unmapped.end() && (*it)->stream == stream; ++it) {
    block* c = *it;
    if (c->prev != nullptr && c->prev->is_free()) c = c->prev;
    if (has_space(c)) return c;
  }
  const std::size_t page = page_size_for(*pool);
  const std::size_t pages = range_pages(page);
  if (pages * page < size) return nullptr;
  std::unique_ptr<expandable_segment> es =
      expandable_segment::reserve(device_, page, pages, stream);
  if (es == nullptr) return nullptr;
  block* candidate = new_block(stream, es->size(), pool, es->base());
  candidate->mapped = false;
  candidate->expandable = es.get();
  segments_.push_back(std::move(es));
  pool->insert_unmapped(candidate);
  return candidate;
}

bool caching_allocator::impl::map_block(block* to_map, std::size_t size) {
  const std::size_t mapped = map_range(*to_map->expandable, to_map->ptr, size);
  if (mapped == 0) return false;
  block_pool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (mapped < to_map->size) {
    block* remaining =
        new_block(to_map->stream, to_map->size - mapped, &pool, to_map->ptr + mapped);
    remaining->mapped = false;
    remaining->expandable = to_map->expandable;
    to_map->size = mapped;
    remaining->splice(to_map, to_map->next);
    pool.insert_unmapped(remaining);
  }
  const std::uint64_t mapped_at = to_map->ptr;  // the trace names the pages mapped, before merging
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  pool.insert(to_map);
  total_allocated_memory_ += mapped;
  stats_.pages_mapped(pool, mapped);
  record(trace_action::segment_map, mapped_at, mapped, to_map->stream);
  return true;
}

caching_allocator::impl::block* caching_allocator::impl::try_allocate_expandable_block(
    stream_id stream, block_pool* pool, std::size_t size) {
  if (const std::size_t excess = policy_->recycle_bytes(total_allocated_memory_, size))
    recycle_free_pages(excess);
  block* candidate = find_expandable_block(stream, pool, size);
  if (candidate == nullptr) return nullptr;
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size))) return nullptr;
  while (candidate->size < size) {
    const std::size_t remaining = size - candidate->size;
    block* next = candidate->next;
    if (!map_block(next, std::min(remaining, next->size))) return nullptr;
    candidate = next;
  }
  pool->blocks.erase(candidate);
  return candidate;
}

// Gives back whole free pages held anywhere in this device's expandable segments, largest
// free blocks first, until at least `bytes` are unmapped or none are left (keel's policy says
// when and how much: pool_policy::recycle_bytes).
void caching_allocator::impl::recycle_free_pages(std::size_t bytes) {
  std::vector<block*> candidates;
  for (block_pool* pool : {&large_, &small_}) {
    for (block* b : pool->blocks) {
      if (b->expandable != nullptr && b->size >= b->expandable->page_size())
        candidates.push_back(b);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const block* a, const block* b) { return a->size > b->size; });
  std::size_t recycled = 0;
  for (block* b : candidates) {
    if (recycled >= bytes) break;
    recycled += unmap_block(b);
  }
}

std::size_t caching_allocator::impl::unmap_block(block* b) {
  const auto [start, bytes] = b->expandable->unmap(b->ptr, b->size);
  if (bytes == 0) return 0;
  block_pool& pool = *b->pool;
  pool.blocks.erase(b);
  // b becomes the unmapped pages; what is left of it on either side stays free and mapped.
  const std::uint64_t old_ptr = b->ptr;
  const std::size_t before = start - old_ptr;
  const std::size_t after = b->size - (before + bytes);
  block* const prev = b->prev;
  block* const next = b->next;
  b->ptr = start;
  b->size = bytes;
  b->mapped = false;
  if (before > 0) {
    block* before_free = new_block(b->stream, before, &pool, old_ptr);
    before_free->expandable = b->expandable;
    before_free->splice(prev, b);
    pool.insert(before_free);
  }
  if (after > 0) {
    block* after_free = new_block(b->stream, after, &pool, start + bytes);
    after_free->expandable = b->expandable;
    after_free->splice(b, next);
    pool.insert(after_free);
  }
  try_merge_blocks(b, b->prev, pool);
  try_merge_blocks(b, b->next, pool);
  pool.insert_unmapped(b);
  KEEL_DCHECK(total_allocated_memory_ >= bytes, "unmapping {} bytes of {} reserved", bytes,
              total_allocated_memory_);
  total_allocated_memory_ -= bytes;
  stats_.pages_unmapped(pool, bytes);
  record(trace_action::segment_unmap, start, bytes, b->stream);
  return bytes;
}

void caching_allocator::impl::release_expandable_segment(block* b) {
  expandable_segment* es = b->expandable;
  b->pool->unmapped.erase(b);
  delete_block(b);
  // Destroying the segment releases its range.
  std::erase_if(segments_, [es](const auto& s) { return s.get() == es; });
}

}  // namespace keel::memory
