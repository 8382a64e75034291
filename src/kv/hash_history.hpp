// Private to keel::kv's policies: a sliding window over a stream of block hashes that answers
// "was h recorded among the last `window` records?" in O(1), without allocating after reset().
//
// The records live in a ring of `window` hashes; an open-addressing table (linear probing,
// backward-shift deletion, load factor <= 1/2) maps each hash in the window to the sequence
// number of its latest record. When a record leaves the ring, its hash leaves the table unless
// it was recorded again since. Memory per window entry: 8 bytes of ring, 32 to 64 of table.
// Invariant: the table holds exactly the distinct hashes of the window. Not thread-safe.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "keel/kv/types.hpp"
#include "mix64.hpp"

namespace keel::kv::detail {

class hash_history {
 public:
  hash_history() { reset(1); }
  // Forgets everything; from now on the window is the last max(window, 1) records.
  void reset(std::size_t window) {
    window_ = std::max<std::size_t>(window, 1);
    ring_.assign(window_, 0);
    slots_.assign(std::bit_ceil(std::max<std::size_t>(16, 2 * window_)), slot{});
    mask_ = slots_.size() - 1;
    seq_ = 0;
  }

  void add(block_hash h) {
    const std::size_t at = static_cast<std::size_t>(seq_ % window_);
    ++seq_;
    if (seq_ > window_) {
      // Record seq_ - window_ leaves the window; its hash goes unless recorded again since.
      const std::size_t i = find(mix64(ring_[at]));
      if (slots_[i].seq == seq_ - window_) erase(i);
    }
    ring_[at] = h;
    const std::uint64_t m = mix64(h);
    slot& s = slots_[find(m)];
    s.key = m;
    s.seq = seq_;
  }

  bool contains(block_hash h) const { return slots_[find(mix64(h))].seq != 0; }

 private:
  struct slot {
    std::uint64_t key = 0;  // mix64(hash)
    std::uint64_t seq = 0;  // latest record of the hash (1-based); 0 = empty slot
  };

  // The slot holding mixed key m, or the empty slot where it would go.
  std::size_t find(std::uint64_t m) const {
    std::size_t i = m & mask_;
    while (slots_[i].seq != 0 && slots_[i].key != m) i = (i + 1) & mask_;
    return i;
  }

  // Backward-shift deletion: probe sequences stay unbroken without tombstones.
  void erase(std::size_t i) {
    for (std::size_t j = (i + 1) & mask_; slots_[j].seq != 0; j = (j + 1) & mask_) {
      const std::size_t home = slots_[j].key & mask_;
      // Move j into the hole at i unless its home lies cyclically in (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = slot{};
  }

  std::size_t window_ = 1;
  std::vector<block_hash> ring_;
  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  std::uint64_t seq_ = 0;
};

}  // namespace keel::kv::detail
