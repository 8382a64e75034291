// Private to keel::kv's policies: a binary min-heap of block ids with a position index, so a
// block's entry can be removed or re-keyed in O(log n) without lazy tombstones.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv::detail {

struct heap_key {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint64_t c = 0;
  friend bool operator<(const heap_key& x, const heap_key& y) {
    return std::tie(x.a, x.b, x.c) < std::tie(y.a, y.b, y.c);
  }
};

class indexed_heap {
 public:
  void reset(std::size_t num_blocks) {
    heap_.clear();
    heap_.reserve(num_blocks);
    pos_.assign(num_blocks, k_absent);
    key_.assign(num_blocks, heap_key{});
  }
  std::size_t size() const noexcept { return heap_.size(); }
  bool contains(block_id b) const noexcept { return pos_[b] != k_absent; }

  // Inserts b with `key`, or re-keys it when present.
  void push(block_id b, const heap_key& key) {
    key_[b] = key;
    if (pos_[b] != k_absent) {
      sift_up(pos_[b]);
      sift_down(pos_[b]);
      return;
    }
    pos_[b] = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(b);
    sift_up(pos_[b]);
  }
  void remove(block_id b) {
    const std::uint32_t i = pos_[b];
    if (i == k_absent) return;
    const std::uint32_t last = static_cast<std::uint32_t>(heap_.size() - 1);
    if (i != last) {
      const block_id moved = heap_[last];
      place(i, moved);
      heap_.pop_back();
      sift_up(i);
      if (pos_[moved] == i) sift_down(i);
    } else {
      heap_.pop_back();
    }
    pos_[b] = k_absent;
  }
  // Precondition: size() > 0.
  block_id pop() {
    const block_id b = heap_.front();
    remove(b);
    return b;
  }
  const heap_key& key(block_id b) const noexcept { return key_[b]; }

 private:
  static constexpr std::uint32_t k_absent = 0xffffffffu;
  void place(std::uint32_t i, block_id b) {
    heap_[i] = b;
    pos_[b] = i;
  }
  void sift_up(std::uint32_t i) {
    const block_id b = heap_[i];
    while (i > 0) {
      const std::uint32_t p = (i - 1) / 2;
      if (!(key_[b] < key_[heap_[p]])) break;
      place(i, heap_[p]);
      i = p;
    }
    place(i, b);
  }
  void sift_down(std::uint32_t i) {
    const block_id b = heap_[i];
    const std::uint32_t n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && key_[heap_[c + 1]] < key_[heap_[c]]) ++c;
      if (!(key_[heap_[c]] < key_[b])) break;
      place(i, heap_[c]);
      i = c;
    }
    place(i, b);
  }

  std::vector<block_id> heap_;
  std::vector<std::uint32_t> pos_;
  std::vector<heap_key> key_;
};

}  // namespace keel::kv::detail
