// Chained block hashes: how keel names the content of a full block of tokens.
//
// hash(block i) = XXH3_64(parent hash || token ids of block i), with parent = k_root_hash for
// the first block, the scheme of vLLM's prefix cache (vLLM hashes a tuple with the parent hash
// and extra keys such as LoRA ids; `salt` plays that role here). Only full blocks are hashed:
// a partially filled last block is never shared. Pure functions, thread-safe. Uses Debian's
// libxxhash (XXH3, 64 bits); the values are stable across runs and machines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv {

// Parent hash of the first block of every sequence.
inline constexpr block_hash k_root_hash = 0x6b65656c5f6b7621ULL;  // "keel_kv!"

// Hash of one block given its parent's hash; `salt` separates caches that must not share
// (a LoRA adapter, a tenant). Token ids are hashed as 32-bit little-endian integers.
block_hash hash_block(block_hash parent, std::span<const std::uint32_t> tokens,
                      std::uint64_t salt = 0);

// Chained hashes of the full blocks of a token sequence: tokens.size() / block_size values.
// Throws keel::invalid_argument when block_size is 0.
std::vector<block_hash> hash_blocks(std::span<const std::uint32_t> tokens, std::size_t block_size,
                                    std::uint64_t salt = 0);

}  // namespace keel::kv
