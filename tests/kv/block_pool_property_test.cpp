// Randomized operation sequences against block_pool, for every policy and both indexes.
// A model of the device memory (what each physical block holds) checks what no counter can:
// a referenced block is never handed out again, a cache hit returns the right content, and a
// write after fork never shows through to another sequence (copy-on-write).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "keel/kv/block_pool.hpp"
#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

constexpr std::size_t k_block = 4;
constexpr std::size_t k_blocks = 24;

std::uint32_t content_of(block_hash h, std::size_t t) {
  return static_cast<std::uint32_t>((h >> 7) * 31 + t) | 0x80000000u;
}

struct live_sequence {
  sequence seq;
  std::vector<std::uint32_t> tokens;  // what the sequence believes its KV holds
};

class pool_harness {
 public:
  pool_harness(const std::string& policy, const std::string& index, std::uint32_t seed)
      : pool_({k_blocks, k_block, true}, make_policy(policy), make_index(index, k_blocks)),
        phys_(k_blocks, std::vector<std::uint32_t>(k_block, 0)),
        rng_(seed) {}

  // One random operation; returns a short description for failure messages.
  std::string step() {
    const unsigned op = rng_() % 10;
    if (op < 4 || live_.empty()) return allocate(op == 3);
    const std::size_t i = rng_() % live_.size();
    if (op < 6) {
      pool_.release(live_[i].seq);
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
      return "release";
    }
    if (op == 6) {
      if (live_.size() < 12) live_.push_back({pool_.fork(live_[i].seq), live_[i].tokens});
      return "fork";
    }
    return append(i, 1 + rng_() % 6);
  }

  void check() {
    pool_.check_invariants();
    std::vector<std::uint32_t> refs(k_blocks, 0);
    for (const live_sequence& s : live_) {
      ASSERT_EQ(s.seq.blocks.size(), (s.seq.num_tokens + k_block - 1) / k_block);
      for (const block_id b : s.seq.blocks) ++refs[b];
      for (std::size_t t = 0; t < s.tokens.size(); ++t) {
        ASSERT_EQ(phys_[s.seq.blocks[t / k_block]][t % k_block], s.tokens[t])
            << "token " << t << " of a live sequence was overwritten";
      }
    }
    for (block_id b = 0; b < k_blocks; ++b) ASSERT_EQ(pool_.ref_count(b), refs[b]) << b;
  }

  block_pool& pool() { return pool_; }
  std::vector<std::vector<block_id>> block_lists() const {
    std::vector<std::vector<block_id>> out;
    for (const live_sequence& s : live_) out.push_back(s.seq.blocks);
    return out;
  }

 private:
  std::string allocate(bool unnamed_then_cache) {
    std::vector<std::uint32_t> path(1 + rng_() % 4);
    for (auto& p : path) p = rng_() % 3;        // a small prefix tree: lots of sharing
    const std::size_t used = rng_() % k_block;  // tokens in a partial last block (0: none)
    std::vector<block_hash> hashes = test::chain(path);
    const bool name_partial = used != 0 && rng_() % 2;
    if (name_partial) {
      auto ext = path;
      ext.push_back(1000 + static_cast<std::uint32_t>(used));
      hashes.push_back(test::chain(ext).back());
    }
    const std::size_t n = path.size() * k_block + used;
    std::vector<std::uint64_t> next(hashes.size());
    for (auto& x : next) x = rng_() % 50;
    request_hints hints;
    hints.next_use = next;
    const std::span<const block_hash> named =
        unnamed_then_cache ? std::span<const block_hash>() : std::span<const block_hash>(hashes);
    const std::size_t expect_hit = pool_.lookup(named, n);
    auto seq = pool_.allocate(named, n, hints);
    if (!seq) {
      EXPECT_LT(pool_.free_blocks(), n / k_block + 1);
      return "allocate (no room)";
    }
    live_sequence s{std::move(*seq), {}};
    for (std::size_t j = 0; j < s.seq.blocks.size(); ++j) {
      const block_id b = s.seq.blocks[j];
      const std::size_t count = std::min(k_block, n - j * k_block);
      if (j < hashes.size()) {
        if (j < expect_hit) {
          for (std::size_t t = 0; t < count; ++t) {
            EXPECT_EQ(phys_[b][t], content_of(hashes[j], t)) << "cache hit with wrong content";
          }
        }
        for (std::size_t t = 0; t < k_block; ++t) phys_[b][t] = content_of(hashes[j], t);
        for (std::size_t t = 0; t < count; ++t) s.tokens.push_back(content_of(hashes[j], t));
      } else {
        for (std::size_t t = 0; t < count; ++t) {
          phys_[b][t] = ++unique_;
          s.tokens.push_back(unique_);
        }
      }
    }
    if (unnamed_then_cache) {
      // The engine filled the blocks; now it tells the pool what they hold.
      pool_.cache_blocks(s.seq, std::span(hashes).first(path.size()));
    }
    live_.push_back(std::move(s));
    return "allocate";
  }

  std::string append(std::size_t i, std::size_t n) {
    live_sequence& s = live_[i];
    auto copies = pool_.append_tokens(s.seq, n);
    if (!copies) return "append (no room)";
    for (const block_copy& c : *copies) phys_[c.dst] = phys_[c.src];
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t t = s.tokens.size();
      s.tokens.push_back(++unique_);
      phys_[s.seq.blocks[t / k_block]][t % k_block] = unique_;
    }
    return copies->empty() ? "append" : "append (copy-on-write)";
  }

  block_pool pool_;
  std::vector<std::vector<std::uint32_t>> phys_;
  std::vector<live_sequence> live_;
  std::mt19937 rng_;
  std::uint32_t unique_ = 0;
};

class PoolProperty : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(PoolProperty, InvariantsHoldUnderRandomOperations) {
  const auto& [policy, index] = GetParam();
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    pool_harness h(policy, index, seed);
    for (int step = 0; step < 3000; ++step) {
      const std::string what = h.step();
      SCOPED_TRACE(testing::Message() << "seed " << seed << " step " << step << ": " << what);
      ASSERT_NO_FATAL_FAILURE(h.check());
      if (HasFailure()) return;
    }
    EXPECT_GT(h.pool().stats().evictions, 100u) << "the sequence must exercise eviction";
    EXPECT_GT(h.pool().stats().hit_blocks, 100u) << "and cache hits";
    EXPECT_GT(h.pool().stats().cow_copies, 10u) << "and copy-on-write";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPoliciesAndIndexes, PoolProperty,
    ::testing::Combine(::testing::ValuesIn(policy_names()),
                       ::testing::Values(std::string("hash"), std::string("radix"))),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// Both indexes answer every query identically, so two pools driven by the same operations hand
// out exactly the same blocks.
TEST(PoolProperty, HashAndRadixIndexesAreInterchangeable) {
  for (const std::string& policy : policy_names()) {
    pool_harness a(policy, "hash", 99), b(policy, "radix", 99);
    for (int step = 0; step < 3000; ++step) {
      ASSERT_EQ(a.step(), b.step()) << policy << " step " << step;
      ASSERT_EQ(a.block_lists(), b.block_lists()) << policy << " step " << step;
    }
    EXPECT_EQ(a.pool().stats().hit_tokens, b.pool().stats().hit_tokens);
    EXPECT_EQ(a.pool().stats().evictions, b.pool().stats().evictions);
  }
}

}  // namespace
}  // namespace keel::kv
