#include "keel/kv/prefix_index.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

using test::chain;

std::vector<block_id> resolve(const prefix_index& idx, const std::vector<block_hash>& keys,
                              std::size_t* run = nullptr) {
  std::vector<block_id> out(keys.size());
  const std::size_t r = idx.resolve(keys, out);
  if (run) *run = r;
  EXPECT_EQ(idx.match_length(keys), r);
  return out;
}

class EveryIndex : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryIndex, LongestPrefixAfterInsertSplitAndErase) {
  auto idx = make_index(GetParam(), 16);
  const auto a = chain({1, 2, 3, 4});
  std::vector<block_id> fresh{0, 1, 2, 3};
  idx->insert(a, fresh, 0);
  EXPECT_EQ(fresh, (std::vector<block_id>{0, 1, 2, 3}));  // all registered
  const auto b = chain({1, 2, 7});  // diverges inside a's run: the radix tree splits
  std::size_t run = 0;
  EXPECT_EQ(resolve(*idx, b, &run), (std::vector<block_id>{0, 1, k_no_block}));
  EXPECT_EQ(run, 2u);
  fresh = {0, 1, 4};
  idx->insert(b, fresh, 2);
  EXPECT_EQ(fresh, (std::vector<block_id>{0, 1, 4}));  // entries before `from` untouched
  EXPECT_EQ(idx->size(), 5u);
  EXPECT_EQ(resolve(*idx, a), (std::vector<block_id>{0, 1, 2, 3}));
  EXPECT_EQ(resolve(*idx, b), (std::vector<block_id>{0, 1, 4}));
  // Evicting a middle block leaves its descendants resolvable but ends the run there.
  idx->erase(1, a[1]);
  EXPECT_FALSE(idx->contains(1, a[1]));
  EXPECT_EQ(resolve(*idx, a, &run), (std::vector<block_id>{0, k_no_block, 2, 3}));
  EXPECT_EQ(run, 1u);
  // Re-inserting the same content fills the hole.
  // Blocks 2 and 3 are cached under a[2], a[3] already: reported back as not registered.
  fresh = {0, 9, 2, 3};
  idx->insert(a, fresh, 1);
  EXPECT_EQ(fresh, (std::vector<block_id>{0, 9, k_no_block, k_no_block}));
  EXPECT_EQ(resolve(*idx, a, &run), (std::vector<block_id>{0, 9, 2, 3}));
  EXPECT_EQ(run, 4u);
  EXPECT_TRUE(idx->contains(9, a[1]));
  for (const auto& [b_, k] : std::vector<std::pair<block_id, block_hash>>{
           {0, a[0]}, {9, a[1]}, {2, a[2]}, {3, a[3]}, {4, b[2]}}) {
    idx->erase(b_, k);
  }
  EXPECT_EQ(idx->size(), 0u);
  EXPECT_EQ(idx->match_length(a), 0u);
}

INSTANTIATE_TEST_SUITE_P(All, EveryIndex, ::testing::Values("hash", "radix"));

TEST(PrefixIndex, HashAndRadixAgreeOnRandomWorkloads) {
  std::mt19937 rng(3);
  constexpr std::size_t n = 64;
  auto h = make_index("hash", n), r = make_index("radix", n);
  std::map<block_id, block_hash> cached;  // block -> key
  std::vector<block_id> free_ids;
  for (block_id b = 0; b < n; ++b) free_ids.push_back(b);
  for (int step = 0; step < 20000; ++step) {
    std::vector<std::uint32_t> path(1 + rng() % 6);
    for (auto& p : path) p = rng() % 3;
    const auto keys = chain(path);
    const auto from_h = resolve(*h, keys), from_r = resolve(*r, keys);
    ASSERT_EQ(from_h, from_r) << "step " << step;
    if (rng() % 3 != 0) {
      std::vector<block_id> blocks = from_h;
      std::size_t from = 0;
      while (from < blocks.size() && blocks[from] != k_no_block) ++from;
      for (std::size_t j = from; j < blocks.size(); ++j) {
        if (blocks[j] != k_no_block || free_ids.empty()) continue;
        blocks[j] = free_ids.back();
        free_ids.pop_back();
        cached[blocks[j]] = keys[j];
      }
      // Both indexes must register the same entries and report the same ones as taken.
      std::vector<block_id> into_h = blocks, into_r = blocks;
      h->insert(keys, into_h, from);
      r->insert(keys, into_r, from);
      ASSERT_EQ(into_h, into_r) << "step " << step;
      for (std::size_t j = from; j < blocks.size(); ++j) {
        if (blocks[j] != k_no_block && from_h[j] != k_no_block) {
          EXPECT_EQ(into_h[j], k_no_block) << "already cached key " << j << " re-registered";
        }
      }
    } else if (!cached.empty()) {
      auto it = cached.begin();
      std::advance(it, static_cast<long>(rng() % cached.size()));
      h->erase(it->first, it->second);
      r->erase(it->first, it->second);
      free_ids.push_back(it->first);
      cached.erase(it);
    }
    ASSERT_EQ(h->size(), cached.size());
    ASSERT_EQ(r->size(), cached.size());
  }
  for (const auto& [b, k] : cached) {
    EXPECT_TRUE(h->contains(b, k));
    EXPECT_TRUE(r->contains(b, k));
  }
}

}  // namespace
}  // namespace keel::kv
