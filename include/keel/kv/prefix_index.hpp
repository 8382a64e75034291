// prefix_index — maps a request's block hashes to the cached blocks that hold them.
//
// Two implementations behind one interface:
//   hash   vLLM's scheme: a flat hash table from chained block hash to block id. Because each
//          hash covers its whole prefix, a lookup is one probe per block.
//   radix  SGLang's scheme: a radix tree over the sequence of block keys; a node holds a run of
//          consecutive blocks and is split when a request diverges inside it. A block evicted
//          from the middle of a path leaves a hole that a later insert of the same key fills,
//          so both indexes answer every query identically (the property tests check this).
//
// Keys are the block hashes a request carries (chained hashes, or a trace's hash ids). A key is
// always looked up together with the keys before it, so the radix tree would also work with
// unchained per-block keys; the hash table needs chained ones.
// Not thread-safe; owned by one block_pool.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "keel/kv/types.hpp"

namespace keel::kv {

class prefix_index {
 public:
  virtual ~prefix_index() = default;

  std::string_view name() const noexcept { return do_name(); }

  // Sets out[j] to the block caching keys[j] (under prefix keys[0..j)) or k_no_block, for every
  // j < keys.size(), and returns the length of the leading run of cached blocks (the prefix
  // hit). Precondition: out.size() >= keys.size().
  std::size_t resolve(std::span<const block_hash> keys, std::span<block_id> out) const {
    return do_resolve(keys, out);
  }
  // Leading run only, without the per-block answer: the cheap query of a lookup.
  std::size_t match_length(std::span<const block_hash> keys) const { return do_match(keys); }

  // Registers blocks[j] for keys[j] for every j >= from with blocks[j] != k_no_block. Where
  // keys[j] is cached already, blocks[j] is set to k_no_block instead, so on return the
  // entries that are not k_no_block are exactly the blocks registered now.
  // Precondition: blocks.size() >= keys.size().
  void insert(std::span<const block_hash> keys, std::span<block_id> blocks, std::size_t from) {
    do_insert(keys, blocks, from);
  }
  // Forgets block b, cached under `key`. Precondition: b is in the index under key.
  void erase(block_id b, block_hash key) { do_erase(b, key); }

  std::size_t size() const noexcept { return do_size(); }
  // True when b is in the index under key (for invariant checks).
  bool contains(block_id b, block_hash key) const { return do_contains(b, key); }

 private:
  virtual std::string_view do_name() const noexcept = 0;
  virtual std::size_t do_resolve(std::span<const block_hash> keys,
                                 std::span<block_id> out) const = 0;
  virtual std::size_t do_match(std::span<const block_hash> keys) const = 0;
  virtual void do_insert(std::span<const block_hash> keys, std::span<block_id> blocks,
                         std::size_t from) = 0;
  virtual void do_erase(block_id b, block_hash key) = 0;
  virtual std::size_t do_size() const noexcept = 0;
  virtual bool do_contains(block_id b, block_hash key) const = 0;
};

// `num_blocks` sizes the tables (block ids are < num_blocks).
std::unique_ptr<prefix_index> make_hash_index(std::size_t num_blocks);
std::unique_ptr<prefix_index> make_radix_index(std::size_t num_blocks);
// "hash" or "radix"; throws keel::invalid_argument otherwise.
std::unique_ptr<prefix_index> make_index(std::string_view name, std::size_t num_blocks);

}  // namespace keel::kv
