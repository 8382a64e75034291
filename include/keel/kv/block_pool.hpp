// block_pool — a KV-cache block manager with ref counts, prefix caching and lazy eviction.
//
// The pool owns num_blocks blocks of block_size tokens (ids 0 .. num_blocks-1) and follows
// vLLM's v1 block pool:
//   * A request's blocks are named by chained hashes (see block_hash.hpp, or a trace's hash
//     ids). allocate() reuses every block whose hash is cached, counting the leading run as the
//     request's prefix hit, and fills the rest with fresh blocks registered under their hashes.
//   * Blocks carry reference counts; release() drops a sequence's references tail first.
//   * Eviction is lazy: a freed block keeps its hash and stays a possible hit until the pool
//     needs a fresh block and no empty block is left; then the eviction_policy picks a victim
//     among the cached blocks with ref count zero (LRU: vLLM's intrusive free queue).
//   * fork() shares a sequence's blocks (parallel sampling, beam search); append_tokens()
//     copies a block before writing into it when it is shared or cached (copy-on-write).
//   * The hit is capped at num_tokens - 1 tokens when cap_hit_at_last_token is set, as vLLM
//     does: the last prompt token is always recomputed to produce logits, so only full blocks
//     within the first num_tokens - 1 tokens can count.
//
// Invariants (check_invariants() verifies them; the property tests call it after every step):
// a block is empty (ref 0, no hash, in the empty queue), cached and free (ref 0, hash, in the
// policy's evictable set and in the index), or in use (ref > 0); the index holds exactly the
// cached blocks; a referenced block is never evicted; stats never go backwards.
// Not thread-safe: one pool belongs to one scheduler thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/free_block_queue.hpp"
#include "keel/kv/prefix_index.hpp"
#include "keel/kv/types.hpp"

namespace keel::kv {

struct block_pool_options {
  std::size_t num_blocks = 0;
  std::size_t block_size = 16;
  bool cap_hit_at_last_token = true;
};

struct pool_stats {
  std::uint64_t requests = 0;          // successful allocate() calls
  std::uint64_t query_tokens = 0;      // prompt tokens of those requests
  std::uint64_t hit_tokens = 0;        // tokens of their (capped) prefix hits
  std::uint64_t query_blocks = 0;      // hashed blocks of those requests
  std::uint64_t hit_blocks = 0;        // blocks of their (capped) prefix hits
  std::uint64_t evictions = 0;         // cached blocks overwritten
  std::uint64_t allocated_blocks = 0;  // fresh blocks handed out
  std::uint64_t cow_copies = 0;        // blocks copied by append_tokens
  double token_hit_rate() const noexcept {
    return query_tokens ? static_cast<double>(hit_tokens) / static_cast<double>(query_tokens) : 0;
  }
  double block_hit_rate() const noexcept {
    return query_blocks ? static_cast<double>(hit_blocks) / static_cast<double>(query_blocks) : 0;
  }
};

// The blocks of one running sequence: blocks[i] holds tokens [i*B, (i+1)*B).
struct sequence {
  std::vector<block_id> blocks;
  std::size_t num_tokens = 0;
};

// A block copy the engine must perform on the device (copy-on-write).
struct block_copy {
  block_id src = k_no_block;
  block_id dst = k_no_block;
  friend bool operator==(const block_copy&, const block_copy&) = default;
};

// What a caller may tell the pool about a request beyond its hashes.
struct request_hints {
  // Offline: next_use[j] = when hashes[j] is requested next (k_never if not). Empty = unknown.
  std::span<const std::uint64_t> next_use;
  // Logical time of the request; 0 = the pool's own request counter.
  std::uint64_t time = 0;
};

class block_pool {
 public:
  // Throws keel::invalid_argument when num_blocks or block_size is 0 or num_blocks does not fit
  // a block_id. A null index means the hash index.
  block_pool(const block_pool_options& options, std::unique_ptr<eviction_policy> policy,
             std::unique_ptr<prefix_index> index = nullptr);

  // The prefix hit, in blocks, that allocate() would count for this request now. No effects.
  std::size_t lookup(std::span<const block_hash> hashes, std::size_t num_tokens) const;

  // Blocks for a request of num_tokens tokens: ceil(num_tokens / block_size) of them, the first
  // hashes.size() named by `hashes` (full blocks; a trace may also name its partial last one).
  // Cached blocks are reused, the rest allocated and cached. Returns nullopt, with nothing
  // changed, when the free blocks do not suffice. Throws keel::invalid_argument when
  // num_tokens is 0 or hashes.size() > ceil(num_tokens / block_size).
  std::optional<sequence> allocate(std::span<const block_hash> hashes, std::size_t num_tokens,
                                   const request_hints& hints = {});

  // Drops the sequence's references, last block first; the sequence becomes empty.
  void release(sequence& seq) noexcept;

  // A second sequence sharing all of seq's blocks.
  sequence fork(const sequence& seq);

  // Grows seq by n tokens. A partially filled last block that is shared or cached is copied
  // first (the returned copies); new blocks are allocated for the rest. nullopt, with nothing
  // changed, when the free blocks do not suffice.
  std::optional<std::vector<block_copy>> append_tokens(sequence& seq, std::size_t n);

  // Registers seq's first hashes.size() blocks under `hashes` (chained hashes of its full
  // blocks) once the engine has filled them; blocks whose hash is already cached elsewhere stay
  // private. Throws keel::invalid_argument when hashes names more than seq's full blocks.
  void cache_blocks(const sequence& seq, std::span<const block_hash> hashes);

  std::size_t num_blocks() const noexcept { return ref_.size(); }
  std::size_t block_size() const noexcept { return options_.block_size; }
  std::uint32_t ref_count(block_id b) const { return ref_.at(b); }
  bool is_cached(block_id b) const { return cached_.at(b) != 0; }
  std::size_t empty_blocks() const noexcept { return empty_.size(); }
  std::size_t evictable_blocks() const noexcept { return policy_->evictable(); }
  std::size_t free_blocks() const noexcept { return empty_.size() + policy_->evictable(); }
  std::size_t cached_blocks() const noexcept { return index_->size(); }

  const pool_stats& stats() const noexcept { return stats_; }
  void reset_stats() noexcept { stats_ = {}; }
  const eviction_policy& policy() const noexcept { return *policy_; }
  const prefix_index& index() const noexcept { return *index_; }

  // Throws std::logic_error naming the first violated invariant. O(num_blocks).
  void check_invariants() const;

 private:
  block_id take_fresh_block();
  void unref(block_id b) noexcept;

  block_pool_options options_;
  std::unique_ptr<eviction_policy> policy_;
  std::unique_ptr<prefix_index> index_;
  std::vector<std::uint32_t> ref_;
  std::vector<block_hash> hash_;
  std::vector<unsigned char> cached_;
  free_block_queue empty_;
  std::vector<block_id> scratch_;
  std::uint64_t clock_ = 0;
  pool_stats stats_;
};

}  // namespace keel::kv
