// Private to keel::kv: splitmix64's finaliser, the key mixer of keel's open-addressing tables.
// A bijection on 64 bits, so equal mixed keys mean equal keys, and small trace ids (0, 1, 2, ...)
// spread over the table as well as xxhash values do. Pure, thread-safe.
#pragma once

#include <cstdint>

namespace keel::kv::detail {

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace keel::kv::detail
