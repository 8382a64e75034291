#include "keel/kv/block_hash.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "keel/core/error.hpp"

namespace keel::kv {
namespace {

TEST(BlockHash, OnlyFullBlocksAreHashedAndTheChainCoversThePrefix) {
  std::vector<std::uint32_t> a(40);
  std::iota(a.begin(), a.end(), 100);
  EXPECT_EQ(hash_blocks(a, 16).size(), 2u);  // 40 tokens: two full blocks of 16
  std::vector<std::uint32_t> b = a;
  b[3] = 7;  // differs in block 0 only
  const auto ha = hash_blocks(a, 16), hb = hash_blocks(b, 16);
  EXPECT_NE(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]) << "block 1 has equal tokens but a different prefix";
  std::vector<std::uint32_t> c = a;
  c[20] = 7;  // differs in block 1 only
  const auto hc = hash_blocks(c, 16);
  EXPECT_EQ(ha[0], hc[0]);
  EXPECT_NE(ha[1], hc[1]);
  EXPECT_EQ(ha[1], hash_block(ha[0], std::span(a).subspan(16, 16)));
  EXPECT_EQ(ha[0], hash_block(k_root_hash, std::span(a).first(16)));
}

TEST(BlockHash, DeterministicSaltedAndCollisionFreeOnASample) {
  std::vector<std::uint32_t> t(16, 5);
  EXPECT_EQ(hash_block(1, t), hash_block(1, t));
  EXPECT_NE(hash_block(1, t), hash_block(1, t, 42));
  EXPECT_NE(hash_block(1, t), hash_block(2, t));
  std::set<block_hash> seen;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    t[i % 16] = 1000 + i;  // every state differs from all earlier ones
    seen.insert(hash_block(k_root_hash, t));
  }
  EXPECT_EQ(seen.size(), 20000u);
  EXPECT_THROW(hash_blocks(t, 0), keel::invalid_argument);
}

}  // namespace
}  // namespace keel::kv
