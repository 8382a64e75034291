#include "keel/kv/block_pool.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "keel/core/error.hpp"
#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

using test::chain;

block_pool make_pool(std::size_t blocks, std::size_t block_size = 4, const char* policy = "lru",
                     bool cap = true, const char* index = "hash") {
  return block_pool({blocks, block_size, cap}, make_policy(policy), make_index(index, blocks));
}

TEST(BlockPool, SecondRequestHitsTheSharedPrefixAndStatsCountTokens) {
  auto pool = make_pool(16);
  const auto a = chain({1, 2, 3});
  auto s1 = pool.allocate(a, 12);
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->blocks.size(), 3u);
  pool.release(*s1);
  EXPECT_EQ(pool.cached_blocks(), 3u);
  EXPECT_EQ(pool.evictable_blocks(), 3u);  // lazily kept
  const auto b = chain({1, 2, 9});
  EXPECT_EQ(pool.lookup(b, 12), 2u);
  auto s2 = pool.allocate(b, 12);
  ASSERT_TRUE(s2);
  EXPECT_EQ(pool.stats().hit_blocks, 2u);
  EXPECT_EQ(pool.stats().hit_tokens, 8u);
  EXPECT_EQ(pool.stats().query_tokens, 24u);
  EXPECT_EQ(pool.stats().query_blocks, 6u);
  EXPECT_DOUBLE_EQ(pool.stats().token_hit_rate(), 8.0 / 24.0);
  pool.check_invariants();
}

TEST(BlockPool, HitIsCappedAtNumTokensMinusOneLikeVllm) {
  auto capped = make_pool(16, 4, "lru", true);
  auto uncapped = make_pool(16, 4, "lru", false);
  const auto h = chain({1, 2, 3});
  for (block_pool* p : {&capped, &uncapped}) {
    auto s = p->allocate(h, 12);
    p->release(*s);
  }
  // 12 tokens in 3 full blocks, all cached: vLLM recomputes the last token, so only the
  // blocks inside the first 11 tokens (two) count.
  EXPECT_EQ(capped.lookup(h, 12), 2u);
  EXPECT_EQ(uncapped.lookup(h, 12), 3u);
  // 10 tokens named by 3 hashes (a trace that hashes its partial last block): the cap is
  // floor(9 / 4) = 2 blocks = 8 tokens; uncapped, 3 blocks are 10 tokens, not 12.
  auto s = uncapped.allocate(h, 10);
  EXPECT_EQ(uncapped.stats().hit_tokens, 10u);
  uncapped.release(*s);
  s = capped.allocate(h, 10);
  EXPECT_EQ(capped.stats().hit_tokens, 8u);
  capped.release(*s);
}

TEST(BlockPool, LazyEvictionTakesEmptyBlocksFirstThenTheLruChainTail) {
  auto pool = make_pool(4);
  auto s = pool.allocate(chain({1, 2}), 8);
  pool.release(*s);                          // frees block of {1,2} first, then {1}
  auto t = pool.allocate(chain({5, 6}), 8);  // two empty blocks left: no eviction
  EXPECT_EQ(pool.stats().evictions, 0u);
  pool.release(*t);
  // Free order now: {1,2}, {1}, {5,6}, {5}. One fresh block evicts the tail of chain 1.
  auto u = pool.allocate(chain({7}), 4);
  EXPECT_EQ(pool.stats().evictions, 1u);
  EXPECT_EQ(pool.lookup(chain({1, 2}), 9), 1u) << "the prefix block survives its tail";
  pool.release(*u);
  pool.check_invariants();
}

TEST(BlockPool, ReferencedBlocksAreNeverEvictedAndFailureChangesNothing) {
  auto pool = make_pool(4);
  auto held = pool.allocate(chain({1, 2, 3}), 12);
  ASSERT_TRUE(held);
  const pool_stats before = pool.stats();
  EXPECT_FALSE(pool.allocate(chain({4, 5}), 8)) << "only one block is free";
  EXPECT_EQ(pool.stats().requests, before.requests);
  EXPECT_EQ(pool.free_blocks(), 1u);
  // A request that shares the held prefix needs just one fresh block.
  auto shared = pool.allocate(chain({1, 2, 3, 4}), 16);
  ASSERT_TRUE(shared);
  EXPECT_EQ(pool.ref_count(held->blocks[0]), 2u);
  pool.release(*shared);
  pool.release(*held);
  EXPECT_EQ(pool.free_blocks(), 4u);
  pool.check_invariants();
}

TEST(BlockPool, ForkSharesAndAppendCopiesOnWrite) {
  auto pool = make_pool(8);
  auto parent = pool.allocate(chain({1}), 6);  // one full block + a partial one (2 tokens)
  ASSERT_TRUE(parent);
  ASSERT_EQ(parent->blocks.size(), 2u);
  sequence child = pool.fork(*parent);
  EXPECT_EQ(pool.ref_count(parent->blocks[1]), 2u);
  // The child writes into the shared partial block: it gets a private copy.
  auto copies = pool.append_tokens(child, 1);
  ASSERT_TRUE(copies);
  ASSERT_EQ(copies->size(), 1u);
  EXPECT_EQ((*copies)[0].src, parent->blocks[1]);
  EXPECT_NE(child.blocks[1], parent->blocks[1]);
  EXPECT_EQ(child.blocks[0], parent->blocks[0]) << "full blocks stay shared";
  EXPECT_EQ(pool.ref_count(parent->blocks[1]), 1u);
  // Now private: appending more copies nothing; crossing a block boundary allocates.
  copies = pool.append_tokens(child, 3);
  ASSERT_TRUE(copies);
  EXPECT_TRUE(copies->empty());
  EXPECT_EQ(child.blocks.size(), 3u);
  EXPECT_EQ(child.num_tokens, 10u);
  EXPECT_EQ(pool.stats().cow_copies, 1u);
  pool.release(child);
  pool.release(*parent);
  EXPECT_EQ(pool.free_blocks(), 8u);
  pool.check_invariants();
}

TEST(BlockPool, CachedPartialBlockIsCopiedBeforeAWrite) {
  auto pool = make_pool(8);
  const auto h = chain({1, 2});
  auto s = pool.allocate(h, 6);  // a trace naming its partial last block
  ASSERT_TRUE(s);
  EXPECT_TRUE(pool.is_cached(s->blocks[1]));
  auto copies = pool.append_tokens(*s, 1);
  ASSERT_TRUE(copies);
  EXPECT_EQ(copies->size(), 1u) << "writing into a cached block would corrupt the cache";
  pool.release(*s);
  pool.check_invariants();
}

TEST(BlockPool, CacheBlocksRegistersFilledBlocks) {
  auto pool = make_pool(8);
  auto s = pool.allocate({}, 9);  // decode-style: no hashes known yet
  ASSERT_TRUE(s);
  EXPECT_EQ(pool.cached_blocks(), 0u);
  const auto h = chain({4, 5});
  pool.cache_blocks(*s, h);
  EXPECT_EQ(pool.cached_blocks(), 2u);
  EXPECT_THROW(pool.cache_blocks(*s, chain({4, 5, 6})), keel::invalid_argument);
  pool.release(*s);
  EXPECT_EQ(pool.lookup(h, 100), 2u);
  pool.check_invariants();
}

TEST(BlockPool, RejectsBadArguments) {
  EXPECT_THROW(make_pool(0), keel::invalid_argument);
  EXPECT_THROW(make_pool(4, 0), keel::invalid_argument);
  auto pool = make_pool(4);
  EXPECT_THROW(pool.allocate(chain({1}), 0), keel::invalid_argument);
  EXPECT_THROW(pool.allocate(chain({1, 2, 3}), 8), keel::invalid_argument);
  EXPECT_THROW(make_policy("mru"), keel::invalid_argument);
  EXPECT_THROW(make_index("trie", 4), keel::invalid_argument);
}

// Requests no pool could hold are refused before anything is allocated for them: a caller
// (keel.kv.BlockPool from Python) may ask for 2^62 tokens.
TEST(BlockPool, HugeRequestsAreRefusedWithoutAllocating) {
  auto pool = make_pool(8);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() - 1;
  EXPECT_FALSE(pool.allocate({}, huge));
  EXPECT_FALSE(pool.allocate({}, 8 * 4 + 1));
  auto seq = pool.allocate({}, 5);
  ASSERT_TRUE(seq);
  EXPECT_FALSE(pool.append_tokens(*seq, huge));
  EXPECT_FALSE(pool.append_tokens(*seq, 8 * 4));
  EXPECT_EQ(seq->num_tokens, 5u);
  EXPECT_EQ(pool.empty_blocks(), 6u);
  ASSERT_TRUE(pool.append_tokens(*seq, 8 * 4 - 5));
  EXPECT_EQ(pool.free_blocks(), 0u);
  pool.release(*seq);
  pool.check_invariants();
  EXPECT_EQ(pool.stats().requests, 1u);
}

}  // namespace
}  // namespace keel::kv
