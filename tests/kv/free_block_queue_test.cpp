#include "keel/kv/free_block_queue.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace keel::kv {
namespace {

std::vector<block_id> contents(const free_block_queue& q) {
  std::vector<block_id> out;
  for (block_id b = q.front(); b != k_no_block; b = q.next(b)) out.push_back(b);
  return out;
}

TEST(FreeBlockQueue, PushPopRemoveKeepOrder) {
  free_block_queue q(8);
  for (block_id b : {3u, 1u, 4u, 5u, 2u}) q.push_back(b);
  EXPECT_EQ(contents(q), (std::vector<block_id>{3, 1, 4, 5, 2}));
  q.remove(4);
  q.remove(3);
  q.remove(2);
  EXPECT_EQ(contents(q), (std::vector<block_id>{1, 5}));
  EXPECT_EQ(q.back(), 5u);
  EXPECT_EQ(q.pop_front(), 1u);
  EXPECT_EQ(q.pop_front(), 5u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.front(), k_no_block);
  EXPECT_EQ(q.back(), k_no_block);
}

TEST(FreeBlockQueue, MatchesAReferenceListUnderRandomOperations) {
  std::mt19937 rng(7);
  free_block_queue q(64);
  std::vector<block_id> model;
  for (int step = 0; step < 20000; ++step) {
    const block_id b = rng() % 64;
    const bool in = std::find(model.begin(), model.end(), b) != model.end();
    ASSERT_EQ(q.contains(b), in);
    if (!in) {
      q.push_back(b);
      model.push_back(b);
    } else if (rng() % 2) {
      q.remove(b);
      model.erase(std::find(model.begin(), model.end(), b));
    } else {
      ASSERT_EQ(q.pop_front(), model.front());
      model.erase(model.begin());
    }
    ASSERT_EQ(q.size(), model.size());
  }
  EXPECT_EQ(contents(q), model);
}

}  // namespace
}  // namespace keel::kv
