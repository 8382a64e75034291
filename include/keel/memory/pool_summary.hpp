// pool_summary — one pool's cache (small or large) at a moment: segments, reserved, allocated
// and the free fragments, in the words every OOM explanation uses.
//
// explain_oom builds it from a snapshot's blocks; the live allocator builds it from its pools
// when an allocation fails, so `keel mem explain` and the exception a program catches describe
// a pool the same way. Plain data and pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace keel::memory {

struct pool_summary {
  bool small = false;
  std::size_t segments = 0;
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;
  std::uint64_t free = 0;
  std::uint64_t largest_free = 0;
  std::vector<std::uint64_t> free_fragments;  // largest first
};

// Adds a free fragment (keeps free, largest_free and the order of free_fragments).
void add_free_fragment(pool_summary& p, std::uint64_t bytes);

// "Large pool: 2 segments, 40.00 MiB reserved, 20.00 MiB allocated, 20.00 MiB free in 2
// fragments (12.00 MiB, 8.00 MiB)." — at most six fragments listed, then "and N more";
// "Small pool: empty." without segments.
std::string describe(const pool_summary& p);

}  // namespace keel::memory
