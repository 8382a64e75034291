// block and block_pool — the caching allocator's bookkeeping of device memory (internal).
//
// A block is a run of bytes inside a segment (a plain segment from the backend, or a virtual
// range of an expandable_segment); the blocks of one segment are linked in address order by
// prev/next and tile it. A block_pool holds the free, mapped blocks of one pool in best-fit
// order (stream, size, address) and, for expandable segments, the unmapped runs in address
// order. The allocator owns every block and guards all of them with its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <set>
#include <vector>

#include "keel/core/check.hpp"
#include "keel/memory/backend.hpp"

namespace keel::memory::detail {

class expandable_segment;
struct block_pool;

struct block {
  stream_id stream = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;
  std::uint64_t ptr = 0;
  block_pool* pool = nullptr;
  block* prev = nullptr;
  block* next = nullptr;
  expandable_segment* expandable = nullptr;
  std::vector<stream_id> stream_uses;
  std::int64_t gc_count_base = 0;
  int event_count = 0;
  bool allocated = false;
  bool mapped = true;

  bool is_split() const noexcept { return prev != nullptr || next != nullptr; }
  // Neither handed out nor waiting for another stream: may be merged or handed out again.
  bool is_free() const noexcept { return !allocated && event_count == 0 && stream_uses.empty(); }
  // Links this block between `before` and `after`, which must be its neighbours in memory.
  void splice(block* before, block* after) noexcept {
    KEEL_DCHECK(before == nullptr || before->ptr + before->size == ptr,
                "splice: block {:#x}+{} does not end where {:#x} starts", before->ptr, before->size,
                ptr);
    KEEL_DCHECK(after == nullptr || ptr + size == after->ptr,
                "splice: block {:#x}+{} does not end where {:#x} starts", ptr, size, after->ptr);
    if (before != nullptr) before->next = this;
    prev = before;
    if (after != nullptr) after->prev = this;
    next = after;
  }
};

struct by_size {
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
struct by_address {
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

struct block_pool {
  block_pool(bool small, std::pmr::memory_resource* nodes)
      : blocks(nodes), unmapped(nodes), is_small(small) {}
  std::pmr::set<block*, by_size> blocks;       // free, mapped
  std::pmr::set<block*, by_address> unmapped;  // unmapped parts of expandable segments
  bool is_small;
  std::int64_t get_free_blocks_call_count = 0;

  // A free, mapped block of this pool enters the best-fit set (once).
  void insert(block* b) {
    KEEL_DCHECK(b->pool == this, "block {:#x} inserted into another pool", b->ptr);
    KEEL_DCHECK(!b->allocated && b->mapped && b->event_count == 0,
                "block {:#x} inserted into its pool while in use or unmapped", b->ptr);
    KEEL_DCHECK(b->size > 0, "empty block {:#x} inserted into its pool", b->ptr);
    b->gc_count_base = get_free_blocks_call_count;
    const bool inserted = blocks.insert(b).second;
    KEEL_DCHECK(inserted, "block {:#x} inserted into its pool twice", b->ptr);
    static_cast<void>(inserted);
  }
  // An unmapped run of an expandable segment enters the unmapped set (once).
  void insert_unmapped(block* b) {
    KEEL_DCHECK(b->pool == this && !b->mapped && b->expandable != nullptr,
                "block {:#x} is not an unmapped run of this pool", b->ptr);
    const bool inserted = unmapped.insert(b).second;
    KEEL_DCHECK(inserted, "unmapped block {:#x} inserted twice", b->ptr);
    static_cast<void>(inserted);
  }
  std::int64_t age(const block* b) const noexcept {
    return get_free_blocks_call_count - b->gc_count_base;
  }
};

// One request on its way through the malloc path.
struct alloc_params {
  std::size_t size = 0;  // rounded
  stream_id stream = 0;
  block_pool* pool = nullptr;
  std::size_t alloc_size = 0;  // of a new segment
  block* found = nullptr;
};

inline std::uint64_t round_up(std::uint64_t x, std::uint64_t to) { return (x + to - 1) / to * to; }

}  // namespace keel::memory::detail
