// keel::fnv1a64 — the 64-bit FNV-1a hash of a byte string: the checksum of keel's own table
// files and the fingerprint of generator outputs in golden data. Not for hash tables of
// untrusted keys (kv uses xxhash). Pure and thread-safe; the same value on every platform.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel {

constexpr std::uint64_t fnv1a64(const unsigned char* data, std::size_t n) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace keel
