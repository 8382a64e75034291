// eviction_policy — the order in which a block_pool gives up cached blocks nobody uses.
//
// A block_pool keeps the content of freed blocks (lazy eviction): a block whose ref count is
// zero but whose hash is still in the prefix index is *evictable*; it is reused as a cache hit
// if a request asks for its hash, or overwritten when the pool needs a fresh block and no empty
// block is left. The policy decides which evictable block goes first. The pool tells the policy
// everything that happens to cached blocks, in this order and only this order:
//
//   on_insert(b, a)   b was just filled and registered under a.hash; it is referenced.
//   on_pin(b)         an evictable b is referenced again (always followed by on_access).
//   on_access(b, a)   a request reuses cached b (a.hit says whether as part of its matched prefix).
//   on_unpin(b)       b's ref count fell to zero: b is evictable from now on.
//   evict()           the pool needs a block: return one evictable block and forget it.
//
// Invariant (checked by the property tests): the policy's evictable set is exactly the set of
// cached blocks with ref count zero. Policies are not thread-safe; the pool serialises calls.
// Implementations override the private do_* functions (non-virtual interface).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv {

// What the pool knows about one access to a block.
struct block_access {
  block_hash hash = 0;               // the block's chained content hash
  std::uint64_t time = 0;            // logical time of the access, non-decreasing
  std::uint32_t depth = 0;           // position of the block in its request (0 = first block)
  std::uint32_t request_blocks = 0;  // blocks in the request
  std::uint32_t prefix_hit = 0;      // blocks of the request's prefix found in the cache
  bool hit = false;                  // on_access: the block was part of the matched prefix
  std::uint64_t next_use = k_never;  // offline knowledge (Belady): next time this hash is used
};

class eviction_policy {
 public:
  virtual ~eviction_policy() = default;

  std::string_view name() const noexcept { return do_name(); }
  // Forgets everything; block ids will be 0 .. num_blocks-1.
  void reset(std::size_t num_blocks) { do_reset(num_blocks); }
  void on_insert(block_id b, const block_access& a) { do_insert(b, a); }
  void on_pin(block_id b) { do_pin(b); }
  void on_access(block_id b, const block_access& a) { do_access(b, a); }
  void on_unpin(block_id b) { do_unpin(b); }
  // Precondition: evictable() > 0. Returns an evictable block and drops it from the policy.
  block_id evict() { return do_evict(); }
  std::size_t evictable() const noexcept { return do_evictable(); }
  bool is_evictable(block_id b) const noexcept { return do_is_evictable(b); }
  // True when the policy reads block_access::next_use (it needs the future of the trace).
  bool offline() const noexcept { return do_offline(); }

 private:
  virtual std::string_view do_name() const noexcept = 0;
  virtual void do_reset(std::size_t num_blocks) = 0;
  virtual void do_insert(block_id b, const block_access& a) = 0;
  virtual void do_pin(block_id b) = 0;
  virtual void do_access(block_id b, const block_access& a) = 0;
  virtual void do_unpin(block_id b) = 0;
  virtual block_id do_evict() = 0;
  virtual std::size_t do_evictable() const noexcept = 0;
  virtual bool do_is_evictable(block_id b) const noexcept = 0;
  virtual bool do_offline() const noexcept { return false; }
};

// The policies keel ships, by name:
//   lru     least recently used first; vLLM's free-block queue (intrusive list, O(1)).
//   fifo    first cached, first evicted; reuse does not refresh a block.
//   lfu     least frequently used first with dynamic aging (LFU-DA: priority = count + L,
//           L = priority of the last victim), ties by recency.
//   s3fifo  S3-FIFO (Yang et al., SOSP'23): a small FIFO (10% of the cached blocks) that
//           filters one-hit blocks, a main FIFO with 2-bit frequency reinsertion, a ghost FIFO
//           of recently evicted hashes that admits returning blocks straight to main.
//   keel    keel's online policy (see docs/kv.md): LRU within three classes evicted in turn:
//           a request's first-time last block, other first-time blocks, reused blocks (hit, or
//           named by a hash among the last 16 * num_blocks inserted). O(1) per call.
//   belady  offline optimum (MIN): the block whose next use is farthest; needs next_use.
std::vector<std::string> policy_names();
std::vector<std::string> online_policy_names();

// Throws keel::invalid_argument naming the known policies when `name` is unknown.
std::unique_ptr<eviction_policy> make_policy(std::string_view name);

}  // namespace keel::kv
