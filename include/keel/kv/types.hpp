// Vocabulary of keel::kv: block ids, block hashes, logical time.
//
// A KV cache is a pool of fixed-size blocks, each holding the keys and values of block_size
// consecutive tokens. Blocks are named by a dense index (block_id, 0 .. num_blocks-1); a full
// block's content is named by a block_hash that also covers everything before it in the
// sequence (a chained hash, as in vLLM), so equal hashes mean equal prefixes. These are plain
// value types; everything here is trivially thread-safe.
#pragma once

#include <cstdint>
#include <limits>

namespace keel::kv {

using block_id = std::uint32_t;
using block_hash = std::uint64_t;

// "No block": the sentinel of intrusive links and of radix-tree slots that hold no block.
inline constexpr block_id k_no_block = std::numeric_limits<block_id>::max();

// "Never used again": the next-use time of a block that an offline policy will not see again.
inline constexpr std::uint64_t k_never = std::numeric_limits<std::uint64_t>::max();

}  // namespace keel::kv
