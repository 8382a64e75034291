#include "keel/kv/block_hash.hpp"

// xxhash's own switch (XXH3_state_t on the stack), named by it.
#define XXH_STATIC_LINKING_ONLY  // NOLINT(readability-identifier-naming)
#include <xxhash.h>

#include <cstring>

#include "keel/core/error.hpp"

namespace keel::kv {

block_hash hash_block(block_hash parent, std::span<const std::uint32_t> tokens,
                      std::uint64_t salt) {
  XXH3_state_t state;
  XXH3_64bits_reset_withSeed(&state, salt);
  unsigned char head[8];
  for (int i = 0; i < 8; ++i) head[i] = static_cast<unsigned char>(parent >> (8 * i));
  XXH3_64bits_update(&state, head, sizeof head);
  // Token ids as little-endian 32-bit words, independent of the host's byte order.
  unsigned char buf[256];
  std::size_t fill = 0;
  for (const std::uint32_t t : tokens) {
    buf[fill++] = static_cast<unsigned char>(t);
    buf[fill++] = static_cast<unsigned char>(t >> 8);
    buf[fill++] = static_cast<unsigned char>(t >> 16);
    buf[fill++] = static_cast<unsigned char>(t >> 24);
    if (fill == sizeof buf) {
      XXH3_64bits_update(&state, buf, fill);
      fill = 0;
    }
  }
  XXH3_64bits_update(&state, buf, fill);
  return XXH3_64bits_digest(&state);
}

std::vector<block_hash> hash_blocks(std::span<const std::uint32_t> tokens, std::size_t block_size,
                                    std::uint64_t salt) {
  if (block_size == 0) throw keel::invalid_argument("hash_blocks: block_size is 0");
  std::vector<block_hash> out;
  out.reserve(tokens.size() / block_size);
  block_hash parent = k_root_hash;
  for (std::size_t start = 0; start + block_size <= tokens.size(); start += block_size) {
    parent = hash_block(parent, tokens.subspan(start, block_size), salt);
    out.push_back(parent);
  }
  return out;
}

}  // namespace keel::kv
