#include "keel/kv/block_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "keel/core/error.hpp"

namespace keel::kv {
namespace {

// Without the overflow of (a + b - 1) / b for a near SIZE_MAX.
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0 ? 1 : 0); }

void fail(const std::string& what) { throw std::logic_error("block_pool invariant: " + what); }

}  // namespace

block_pool::block_pool(const block_pool_options& options, std::unique_ptr<eviction_policy> policy,
                       std::unique_ptr<prefix_index> index)
    : options_(options), policy_(std::move(policy)), index_(std::move(index)) {
  if (options.num_blocks == 0 || options.block_size == 0) {
    throw keel::invalid_argument(
        fmt::format("block_pool: num_blocks ({}) and block_size ({}) must be positive",
                    options.num_blocks, options.block_size));
  }
  if (options.num_blocks >= k_no_block) {
    throw keel::invalid_argument(
        fmt::format("block_pool: num_blocks {} exceeds the block id range", options.num_blocks));
  }
  if (!policy_) throw keel::invalid_argument("block_pool: no eviction policy");
  if (!index_) index_ = make_hash_index(options.num_blocks);
  policy_->reset(options.num_blocks);
  ref_.assign(options.num_blocks, 0);
  hash_.assign(options.num_blocks, 0);
  cached_.assign(options.num_blocks, 0);
  empty_.reset(options.num_blocks);
  for (std::size_t b = 0; b < options.num_blocks; ++b) empty_.push_back(static_cast<block_id>(b));
}

std::size_t block_pool::lookup(std::span<const block_hash> hashes, std::size_t num_tokens) const {
  const std::size_t m = index_->match_length(hashes);
  if (options_.cap_hit_at_last_token && num_tokens > 0) {
    return std::min(m, (num_tokens - 1) / options_.block_size);
  }
  return m;
}

block_id block_pool::take_fresh_block() {
  if (!empty_.empty()) return empty_.pop_front();
  const block_id victim = policy_->evict();
  index_->erase(victim, hash_[victim]);
  cached_[victim] = 0;
  ++stats_.evictions;
  return victim;
}

std::optional<sequence> block_pool::allocate(std::span<const block_hash> hashes,
                                             std::size_t num_tokens, const request_hints& hints) {
  const std::size_t bs = options_.block_size;
  if (num_tokens == 0) throw keel::invalid_argument("block_pool::allocate: num_tokens is 0");
  const std::size_t n = ceil_div(num_tokens, bs);
  if (hashes.size() > n) {
    throw keel::invalid_argument(
        fmt::format("block_pool::allocate: {} hashes for {} tokens ({} blocks of {})",
                    hashes.size(), num_tokens, n, bs));
  }
  // More blocks than the pool owns can never be found (and must not be allocated for).
  if (n > ref_.size()) return std::nullopt;
  sequence seq;
  seq.blocks.assign(n, k_no_block);
  seq.num_tokens = num_tokens;
  const std::size_t m = index_->resolve(hashes, seq.blocks);

  // Feasibility first: fresh blocks needed vs. blocks that can be freed without touching the
  // cached blocks this request is about to reference.
  std::size_t fresh = 0;
  std::size_t pinned_free = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const block_id b = seq.blocks[j];
    if (b == k_no_block) {
      ++fresh;
    } else if (ref_[b] == 0) {
      ++pinned_free;
    }
  }
  if (fresh > empty_.size() + policy_->evictable() - pinned_free) return std::nullopt;

  ++clock_;
  block_access a;
  a.time = hints.time != 0 ? hints.time : clock_;
  a.request_blocks = static_cast<std::uint32_t>(n);
  a.prefix_hit = static_cast<std::uint32_t>(m);
  // Reference the reused blocks before any eviction can pick them.
  for (std::size_t j = 0; j < n; ++j) {
    const block_id b = seq.blocks[j];
    if (b == k_no_block) continue;
    if (ref_[b]++ == 0) policy_->on_pin(b);
  }
  // scratch_[j]: the fresh block for hashes[j], to be registered; k_no_block for reused ones.
  scratch_.assign(hashes.size(), k_no_block);
  for (std::size_t j = 0; j < n; ++j) {
    if (seq.blocks[j] != k_no_block) continue;
    const block_id b = take_fresh_block();
    ref_[b] = 1;
    seq.blocks[j] = b;
    if (j < hashes.size()) scratch_[j] = b;
    ++stats_.allocated_blocks;
  }
  index_->insert(hashes, scratch_, m);
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    const block_id b = seq.blocks[j];
    a.hash = hashes[j];
    a.depth = static_cast<std::uint32_t>(j);
    a.next_use = j < hints.next_use.size() ? hints.next_use[j] : k_never;
    if (cached_[b]) {
      a.hit = j < m;
      policy_->on_access(b, a);
    } else if (scratch_[j] != k_no_block) {
      cached_[b] = 1;
      hash_[b] = hashes[j];
      a.hit = false;
      policy_->on_insert(b, a);
    }
  }
  std::size_t hit = m;
  if (options_.cap_hit_at_last_token) hit = std::min(hit, (num_tokens - 1) / bs);
  ++stats_.requests;
  stats_.query_tokens += num_tokens;
  stats_.query_blocks += hashes.size();
  stats_.hit_blocks += hit;
  stats_.hit_tokens += std::min(hit * bs, num_tokens);
  return seq;
}

void block_pool::unref(block_id b) noexcept {
  if (--ref_[b] != 0) return;
  if (cached_[b]) {
    policy_->on_unpin(b);
  } else {
    empty_.push_back(b);
  }
}

void block_pool::release(sequence& seq) noexcept {
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) unref(*it);
  seq.blocks.clear();
  seq.num_tokens = 0;
}

sequence block_pool::fork(const sequence& seq) {
  for (const block_id b : seq.blocks) ++ref_[b];
  return seq;
}

std::optional<std::vector<block_copy>> block_pool::append_tokens(sequence& seq, std::size_t n) {
  const std::size_t bs = options_.block_size;
  const std::size_t used = seq.num_tokens % bs;  // tokens in a partial last block
  const bool copy_last =
      n > 0 && used != 0 && (ref_[seq.blocks.back()] > 1 || cached_[seq.blocks.back()]);
  if (n > std::numeric_limits<std::size_t>::max() - seq.num_tokens) return std::nullopt;
  const std::size_t need = ceil_div(seq.num_tokens + n, bs);
  if (need > ref_.size()) return std::nullopt;
  const std::size_t grow = need - seq.blocks.size();
  if (grow + (copy_last ? 1 : 0) > free_blocks()) return std::nullopt;
  std::vector<block_copy> copies;
  if (copy_last) {
    const block_id src = seq.blocks.back();
    const block_id dst = take_fresh_block();
    ref_[dst] = 1;
    ++stats_.allocated_blocks;
    unref(src);
    seq.blocks.back() = dst;
    copies.push_back({src, dst});
    ++stats_.cow_copies;
  }
  for (std::size_t i = 0; i < grow; ++i) {
    const block_id b = take_fresh_block();
    ref_[b] = 1;
    ++stats_.allocated_blocks;
    seq.blocks.push_back(b);
  }
  seq.num_tokens += n;
  return copies;
}

void block_pool::cache_blocks(const sequence& seq, std::span<const block_hash> hashes) {
  if (hashes.size() > seq.num_tokens / options_.block_size) {
    throw keel::invalid_argument(
        fmt::format("block_pool::cache_blocks: {} hashes but the sequence has {} full blocks",
                    hashes.size(), seq.num_tokens / options_.block_size));
  }
  // Blocks already cached are left alone; the index drops hashes cached by another block.
  scratch_.assign(hashes.size(), k_no_block);
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    if (!cached_[seq.blocks[j]]) scratch_[j] = seq.blocks[j];
  }
  index_->insert(hashes, scratch_, 0);
  block_access a;
  a.time = ++clock_;
  a.request_blocks = static_cast<std::uint32_t>(seq.blocks.size());
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    const block_id b = scratch_[j];
    if (b == k_no_block) continue;
    cached_[b] = 1;
    hash_[b] = hashes[j];
    a.hash = hashes[j];
    a.depth = static_cast<std::uint32_t>(j);
    policy_->on_insert(b, a);
  }
}

void block_pool::check_invariants() const {
  std::size_t cached = 0;
  std::size_t evictable = 0;
  for (std::size_t i = 0; i < ref_.size(); ++i) {
    const auto b = static_cast<block_id>(i);
    const bool in_empty = empty_.contains(b);
    const bool in_policy = policy_->is_evictable(b);
    if (ref_[b] > std::numeric_limits<std::uint32_t>::max() / 2) {
      fail(fmt::format("block {} has ref count {} (underflow)", b, ref_[b]));
    }
    if (cached_[b]) {
      ++cached;
      if (!index_->contains(b, hash_[b])) fail(fmt::format("cached block {} not in index", b));
      if (in_empty) fail(fmt::format("cached block {} in the empty queue", b));
      if ((ref_[b] == 0) != in_policy) {
        fail(fmt::format("cached block {} with ref {} evictable={}", b, ref_[b], in_policy));
      }
      evictable += in_policy ? 1 : 0;
    } else {
      if (in_policy) fail(fmt::format("uncached block {} in the policy's evictable set", b));
      if ((ref_[b] == 0) != in_empty) {
        fail(fmt::format("uncached block {} with ref {} in_empty={}", b, ref_[b], in_empty));
      }
    }
  }
  if (cached != index_->size()) {
    fail(fmt::format("{} cached blocks but the index holds {}", cached, index_->size()));
  }
  if (evictable != policy_->evictable()) {
    fail(fmt::format("{} evictable blocks but the policy counts {}", evictable,
                     policy_->evictable()));
  }
  if (stats_.hit_tokens > stats_.query_tokens || stats_.hit_blocks > stats_.query_blocks) {
    fail("more hits than queries");
  }
}

}  // namespace keel::kv
