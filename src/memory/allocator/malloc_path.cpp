// The malloc path in PyTorch's order (best fit, free-memory callbacks, garbage collection, a
// new segment, releasing oversize blocks, releasing every cached block), splitting, and
// freeing with coalescing. Everything here runs under the allocator lock; allocate_segment
// alone may release it around the backend call (release_lock_on_cudamalloc).
#include <algorithm>
#include <iterator>
#include <limits>

#include "allocator_impl.hpp"
#include "keel/core/check.hpp"

namespace keel::memory {

bool caching_allocator::impl::get_free_block(alloc_params& p) {
  block_pool& pool = *p.pool;
  if (set_fraction_ && config_.garbage_collection_threshold > 0.0)
    ++pool.get_free_blocks_call_count;
  block key;
  key.stream = p.stream;
  key.size = p.size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
  if ((*it)->expandable != nullptr) {
    if (expandable_) {
      // Best fit counts what a block can grow into by mapping the unmapped space after it.
      const auto expandable_size = [](const block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable != nullptr && next != pool.blocks.end() &&
             (*next)->stream == p.stream && expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable != nullptr &&
               (*it)->stream == p.stream);
      if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    }
  }
  // Never hand an oversize block to a small request; round oversize requests only so far.
  if (p.size < config_.max_split_size && (*it)->size >= config_.max_split_size) return false;
  // (*it)->size >= p.size: the set orders by size within the stream. Subtracting cannot wrap
  // where p.size + max_non_split_rounding_size could.
  if (p.size >= config_.max_split_size &&
      (*it)->size - p.size >= config_.max_non_split_rounding_size) {
    return false;
  }
  p.found = *it;
  pool.blocks.erase(it);
  return true;
}

bool caching_allocator::impl::should_split(const block* b, std::size_t size) const noexcept {
  const std::size_t remaining = b->size - size;
  if (b->pool->is_small || expandable_) return remaining >= k_min_block_size;
  return size < config_.max_split_size && remaining > k_small_size;
}

void caching_allocator::impl::garbage_collect_cached_blocks() {
  const std::size_t threshold =
      scaled(std::min(config_.garbage_collection_threshold, 1.0), allowed_memory_maximum_);
  if (total_allocated_memory_ <= threshold) return;
  const std::size_t target = total_allocated_memory_ - threshold;
  std::size_t reclaimed = 0;
  std::int64_t total_age = 0;
  int freeable = 0;
  for (const block* b : large_.blocks) {
    if (!b->is_split() && b->expandable == nullptr) {
      total_age += large_.age(b);
      ++freeable;
    }
  }
  if (freeable == 0) return;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / freeable;
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      block* b = *it++;
      if (!b->is_split() && b->expandable == nullptr &&
          static_cast<double>(large_.age(b)) >= age_threshold) {
        freed = true;
        reclaimed += b->size;
        total_age -= large_.age(b);
        --freeable;
        release_block(b);
      }
    }
  }
}

bool caching_allocator::impl::alloc_block(alloc_params& p, bool is_retry, lock_type& lock) {
  if (is_retry) stats_.alloc_retried();
  const std::size_t size = p.alloc_size;
  KEEL_DCHECK(total_allocated_memory_ + in_flight_ <= k_max_device_bytes,
              "reserved {} (and {} on the way) exceeds the cap", total_allocated_memory_,
              in_flight_);
  // Never more than k_max_device_bytes in total, so that no sum of sizes wraps.
  const std::size_t held = total_allocated_memory_ + in_flight_;
  if (size > k_max_device_bytes - held) return false;
  if (set_fraction_ && held + size > allowed_memory_maximum_) return false;
  if (expandable_) {
    p.found = try_allocate_expandable_block(p.stream, p.pool, p.size);
    return p.found != nullptr;
  }
  const std::optional<std::uint64_t> ptr = allocate_segment(size, lock);
  if (!ptr) return false;
  total_allocated_memory_ += size;
  p.found = new_block(p.stream, size, p.pool, *ptr);
  stats_.segment_allocated(*p.pool, size);
  record(trace_action::segment_alloc, *ptr, size, p.stream);
  return true;
}

// PyTorch's release_lock_on_cudamalloc: the device allocation runs with the allocator lock
// released (the backend lock still serialises the backend). The bytes count against the caps
// meanwhile, so that concurrent requests cannot overshoot them; the new segment is in no pool
// yet, so nothing else can see it.
std::optional<std::uint64_t> caching_allocator::impl::allocate_segment(std::size_t size,
                                                                       lock_type& lock) {
  if (!config_.release_lock_on_malloc) return device_.allocate_segment(size);
  in_flight_ += size;
  lock.unlock();
  struct relock {
    impl& self;
    lock_type& lock;
    std::size_t size;
    ~relock() {
      lock.lock();
      self.in_flight_ -= size;
    }
  } const relock_on_exit{*this, lock, size};
  return device_.allocate_segment(size);
}

// Frees oversize cached blocks, the smallest one that covers the request or else the
// largest ones until enough is released.
bool caching_allocator::impl::release_available_cached_blocks(const alloc_params& p) {
  if (config_.max_split_size == allocator_config::k_unlimited) return false;
  block_pool& pool = *p.pool;
  block key;
  key.stream = p.stream;
  key.size = std::max(p.size, config_.max_split_size);
  auto it = pool.blocks.lower_bound(&key);
  while (it != pool.blocks.end() && (*it)->stream == p.stream && (*it)->expandable != nullptr) ++it;
  if (it == pool.blocks.end() || (*it)->stream != p.stream) {
    if (it == pool.blocks.begin()) return false;
    std::size_t released = 0;
    --it;
    while (released < key.size && (*it)->size >= config_.max_split_size &&
           (*it)->stream == p.stream) {
      auto current = it;
      const bool at_begin = it == pool.blocks.begin();
      if (!at_begin) --it;
      if ((*current)->expandable == nullptr) {
        released += (*current)->size;
        release_block(*current);
      }
      if (at_begin) break;
    }
    return released >= key.size;
  }
  release_block(*it);
  return true;
}

bool caching_allocator::impl::release_cached_blocks() {
  stats_.streams_synchronized();
  events_.synchronize_all([this](block* b) { free_block(b); });
  release_blocks(large_);
  release_blocks(small_);
  return true;
}

void caching_allocator::impl::release_blocks(block_pool& pool) {
  std::vector<block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    block* b = *it++;
    if (b->expandable != nullptr) {
      to_unmap.push_back(b);
    } else if (!b->is_split()) {
      release_block(b);
    }
  }
  for (block* b : to_unmap) {
    unmap_block(b);
    if (!b->is_split()) release_expandable_segment(b);
  }
}

void caching_allocator::impl::release_block(block* b) {
  record(trace_action::segment_free, b->ptr, b->size, b->stream);
  device_.free_segment(b->ptr, b->size);
  KEEL_DCHECK(total_allocated_memory_ >= b->size, "releasing {} bytes of {} reserved", b->size,
              total_allocated_memory_);
  total_allocated_memory_ -= b->size;
  stats_.segment_released(*b->pool, b->size);
  b->pool->blocks.erase(b);
  delete_block(b);
}

std::uint64_t caching_allocator::impl::alloc_found_block(const alloc_params& p,
                                                         std::size_t orig_size, bool split) {
  block* b = p.found;
  block_pool& pool = *p.pool;
  const bool already_split = b->is_split();
  KEEL_DCHECK(b->size >= p.size, "block {:#x} of {} bytes handed out for {}", b->ptr, b->size,
              p.size);
  if (split) {
    block* remaining = b;
    KEEL_DCHECK(remaining->size > p.size, "splitting {:#x}: nothing remains", remaining->ptr);
    b = new_block(p.stream, p.size, &pool, remaining->ptr);
    b->expandable = remaining->expandable;
    remaining->ptr += p.size;
    remaining->size -= p.size;
    b->splice(remaining->prev, remaining);
    pool.insert(remaining);
    if (b->expandable == nullptr) {
      // A split block that is split again keeps its count and loses b's bytes; a whole one
      // leaves one inactive split block, the remainder.
      if (already_split) {
        stats_.inactive_split_changed(pool, 0, -static_cast<std::int64_t>(b->size));
      } else {
        stats_.inactive_split_changed(pool, 1, static_cast<std::int64_t>(remaining->size));
      }
    }
  } else if (already_split && b->expandable == nullptr) {
    stats_.inactive_split_changed(pool, -1, -static_cast<std::int64_t>(b->size));
  }
  b->allocated = true;
  b->requested_size = orig_size;
  record(trace_action::alloc, b->ptr, orig_size, b->stream);
  live_.emplace(b->ptr, b);
  stats_.block_allocated(pool, b->size, orig_size);
  return b->ptr;
}

// ---- freeing ----

void caching_allocator::impl::free_block(block* b) {
  record(trace_action::free_completed, b->ptr, b->requested_size, b->stream);
  const std::size_t original_size = b->size;
  const std::size_t requested = b->requested_size;
  block_pool& pool = *b->pool;
  std::int64_t split_blocks = 0;
  std::int64_t split_bytes = 0;
  for (block* candidate : {b->prev, b->next}) {
    const std::size_t subsumed = try_merge_blocks(b, candidate, pool);
    if (subsumed > 0) {
      split_blocks -= 1;
      split_bytes -= static_cast<std::int64_t>(subsumed);
    }
  }
  pool.insert(b);
  if (b->is_split()) {
    split_blocks += 1;
    split_bytes += static_cast<std::int64_t>(b->size);
  }
  if (b->expandable == nullptr) stats_.inactive_split_changed(pool, split_blocks, split_bytes);
  stats_.block_deactivated(pool, original_size, requested);
}

std::size_t caching_allocator::impl::try_merge_blocks(block* dst, block* src, block_pool& pool) {
  if (src == nullptr || !src->is_free() || dst->mapped != src->mapped) return 0;
  KEEL_DCHECK(dst->prev == src ? src->ptr + src->size == dst->ptr
                               : dst->next == src && dst->ptr + dst->size == src->ptr,
              "merging {:#x}+{} with {:#x}+{}: not neighbours", dst->ptr, dst->size, src->ptr,
              src->size);
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const std::size_t subsumed = src->size;
  dst->size += subsumed;
  const std::size_t erased = src->mapped ? pool.blocks.erase(src) : pool.unmapped.erase(src);
  KEEL_DCHECK(erased == 1, "merged block {:#x} was not in its pool", src->ptr);
  static_cast<void>(erased);
  delete_block(src);
  return subsumed;
}

}  // namespace keel::memory
