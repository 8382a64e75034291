// free_block_queue — vLLM's intrusive doubly linked list of blocks, O(1) everywhere.
//
// The queue links block ids through two arrays indexed by block id (prev/next), so pushing,
// popping and removing from the middle never allocate and never search: exactly the
// FreeKVCacheBlockQueue of vLLM's v1 block pool. keel uses it twice: for blocks that hold no
// cached content, and as the LRU eviction order of cached blocks whose ref count is zero
// (least recently freed at the front; a request frees its blocks tail first, so the end of a
// chain is evicted before its beginning).
//
// Invariants: a block is in at most one position; contains(b) is O(1); size() is exact.
// Not thread-safe: the owner (block_pool or a policy) serialises access.
#pragma once

#include <cstddef>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv {

class free_block_queue {
 public:
  free_block_queue() = default;
  // An empty queue able to hold blocks 0 .. capacity-1.
  explicit free_block_queue(std::size_t capacity) { reset(capacity); }

  // Empties the queue and sets the id range to 0 .. capacity-1.
  void reset(std::size_t capacity) {
    prev_.assign(capacity, k_no_block);
    next_.assign(capacity, k_no_block);
    in_.assign(capacity, 0);
    head_ = tail_ = k_no_block;
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool contains(block_id b) const noexcept { return in_[b] != 0; }
  block_id front() const noexcept { return head_; }
  block_id back() const noexcept { return tail_; }
  // The block after b, or k_no_block at the end (for iteration in tests and policies).
  block_id next(block_id b) const noexcept { return next_[b]; }

  // Precondition: !contains(b).
  void push_back(block_id b) noexcept {
    prev_[b] = tail_;
    next_[b] = k_no_block;
    if (tail_ != k_no_block) {
      next_[tail_] = b;
    } else {
      head_ = b;
    }
    tail_ = b;
    in_[b] = 1;
    ++size_;
  }

  // Precondition: !empty().
  block_id pop_front() noexcept {
    const block_id b = head_;
    remove(b);
    return b;
  }

  // Precondition: contains(b).
  void remove(block_id b) noexcept {
    const block_id p = prev_[b];
    const block_id n = next_[b];
    if (p != k_no_block) {
      next_[p] = n;
    } else {
      head_ = n;
    }
    if (n != k_no_block) {
      prev_[n] = p;
    } else {
      tail_ = p;
    }
    prev_[b] = next_[b] = k_no_block;
    in_[b] = 0;
    --size_;
  }

 private:
  std::vector<block_id> prev_;
  std::vector<block_id> next_;
  std::vector<unsigned char> in_;
  block_id head_ = k_no_block;
  block_id tail_ = k_no_block;
  std::size_t size_ = 0;
};

}  // namespace keel::kv
