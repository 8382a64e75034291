// Each policy's defining order, driven through the eviction_policy interface directly.
#include "keel/kv/eviction_policy.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace keel::kv {
namespace {

block_access at(std::uint64_t time, block_hash hash = 0, std::uint64_t next_use = k_never,
                std::uint32_t depth = 0) {
  block_access a;
  a.time = time;
  a.hash = hash;
  a.next_use = next_use;
  a.depth = depth;
  return a;
}

// Inserts blocks 0..n-1 at times 1..n and frees them in that order.
std::unique_ptr<eviction_policy> filled(const std::string& name, std::size_t n) {
  auto p = make_policy(name);
  p->reset(16);
  for (block_id b = 0; b < n; ++b) {
    p->on_insert(b, at(b + 1, 1000 + b, 100 - b));
    p->on_unpin(b);
  }
  return p;
}

class EveryPolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPolicy, EvictsOnlyEvictableBlocksAndEachOnce) {
  auto p = filled(GetParam(), 8);
  p->on_pin(3);
  p->on_access(3, at(20, 1003, 1));
  p->on_pin(5);
  p->on_access(5, at(21, 1005, 2));
  EXPECT_EQ(p->evictable(), 6u);
  EXPECT_FALSE(p->is_evictable(3));
  std::set<block_id> out;
  while (p->evictable() > 0) {
    const block_id b = p->evict();
    EXPECT_NE(b, 3u);
    EXPECT_NE(b, 5u);
    EXPECT_TRUE(out.insert(b).second) << "evicted twice: " << b;
    EXPECT_FALSE(p->is_evictable(b));
  }
  EXPECT_EQ(out.size(), 6u);
  p->on_unpin(3);
  EXPECT_EQ(p->evict(), 3u);
}

INSTANTIATE_TEST_SUITE_P(All, EveryPolicy, ::testing::ValuesIn(policy_names()));

TEST(Policies, LruEvictsTheLeastRecentlyFreed) {
  auto p = filled("lru", 4);
  p->on_pin(0);
  p->on_access(0, at(10));
  p->on_unpin(0);  // 0 is now the most recently freed
  EXPECT_EQ(p->evict(), 1u);
  EXPECT_EQ(p->evict(), 2u);
  EXPECT_EQ(p->evict(), 3u);
  EXPECT_EQ(p->evict(), 0u);
}

TEST(Policies, FifoIgnoresReuse) {
  auto p = filled("fifo", 3);
  p->on_pin(0);
  p->on_access(0, at(10));
  p->on_unpin(0);
  EXPECT_EQ(p->evict(), 0u);
  EXPECT_EQ(p->evict(), 1u);
}

TEST(Policies, LfuKeepsFrequentBlocksThenAgesThemOut) {
  auto p = filled("lfu", 3);
  for (int i = 0; i < 3; ++i) {
    p->on_pin(0);
    p->on_access(0, at(10 + i));
    p->on_unpin(0);
  }
  EXPECT_EQ(p->evict(), 1u);  // count 1, older
  EXPECT_EQ(p->evict(), 2u);
  // Aging: L is now 1, so new blocks start at priority 2; block 0 (4) outlives them.
  for (block_id b = 5; b < 9; ++b) {
    p->on_insert(b, at(20 + b));
    p->on_unpin(b);
  }
  EXPECT_EQ(p->evict(), 5u);  // priority 2 < 4
  EXPECT_EQ(p->evict(), 6u);
}

TEST(Policies, BeladyEvictsTheFarthestNextUseAndNeverUsedFirst) {
  auto p = make_policy("belady");
  ASSERT_TRUE(p->offline());
  p->reset(8);
  p->on_insert(0, at(1, 0, 50));
  p->on_insert(1, at(1, 0, k_never));
  p->on_insert(2, at(1, 0, 10));
  p->on_insert(3, at(1, 0, 90));
  for (block_id b = 0; b < 4; ++b) p->on_unpin(b);
  EXPECT_EQ(p->evict(), 1u);
  EXPECT_EQ(p->evict(), 3u);
  EXPECT_EQ(p->evict(), 0u);
  EXPECT_EQ(p->evict(), 2u);
}

TEST(Policies, S3FifoFiltersOneHitBlocksAndAdmitsGhostsToMain) {
  auto p = make_policy("s3fifo");
  p->reset(10);
  // Blocks 0..9 all inserted; block 0 reused while in the small queue.
  for (block_id b = 0; b < 10; ++b) {
    p->on_insert(b, at(b + 1, 100 + b));
    p->on_unpin(b);
  }
  p->on_pin(0);
  p->on_access(0, at(20, 100));
  p->on_unpin(0);
  // The small queue holds everything (main is empty): 0 moves to main, 1 is evicted.
  EXPECT_EQ(p->evict(), 1u);
  // Block 1's hash returns: the ghost admits it straight to main.
  p->on_insert(1, at(30, 101));
  p->on_unpin(1);
  std::vector<block_id> order;
  while (p->evictable() > 0) order.push_back(p->evict());
  // One-hit blocks 2..9 leave before the main-queue blocks 0 and 1.
  ASSERT_EQ(order.size(), 10u);
  EXPECT_EQ(std::vector<block_id>(order.end() - 2, order.end()), (std::vector<block_id>{0, 1}));
}

// Block j of a request of n blocks at time t.
block_access in_request(std::uint64_t t, block_hash hash, std::uint32_t j, std::uint32_t n) {
  block_access a = at(t, hash, k_never, j);
  a.request_blocks = n;
  return a;
}

// Inserts request blocks first..first+n-1 (hashes base+j) at time t and releases them tail first.
void insert_request(eviction_policy& p, block_id first, std::uint32_t n, std::uint64_t t,
                    block_hash base) {
  for (std::uint32_t j = 0; j < n; ++j) p.on_insert(first + j, in_request(t, base + j, j, n));
  for (std::uint32_t j = n; j-- > 0;) p.on_unpin(first + j);
}

TEST(Policies, KeelEvictsLastBlocksThenFirstTimeThenReusedBlocks) {
  auto p = make_policy("keel");
  p->reset(16);
  insert_request(*p, 0, 4, 1, 100);  // blocks 0..3; 3 ends the request
  insert_request(*p, 4, 3, 2, 200);  // blocks 4..6; 6 ends the request
  p->on_pin(1);
  p->on_access(1, in_request(3, 101, 1, 2));
  p->on_unpin(1);
  std::vector<block_id> order;
  while (p->evictable() > 0) order.push_back(p->evict());
  // Last blocks, then first-time blocks least recently released first (a request releases tail
  // first), then the reused block.
  EXPECT_EQ(order, (std::vector<block_id>{3, 6, 2, 0, 5, 4, 1}));
}

TEST(Policies, KeelTreatsAReturningHashAsReusedUntilItsHistoryForgetsIt) {
  constexpr block_id n = 4;  // the history holds the last 16 * 4 inserted hashes
  auto p = make_policy("keel");
  p->reset(n);
  std::uint64_t t = 0;
  auto cycle = [&](block_id b, block_hash h) {  // insert h into b, release it
    p->on_insert(b, in_request(++t, h, 0, 2));
    p->on_unpin(b);
  };
  cycle(0, 42);
  cycle(1, 43);
  EXPECT_EQ(p->evict(), 0u);  // both first-time: the older goes
  cycle(0, 42);               // 42 comes back: reused now, so 43 goes first
  EXPECT_EQ(p->evict(), 1u);
  EXPECT_EQ(p->evict(), 0u);
  for (block_hash h = 1000; h < 1000 + 16 * n - 1; ++h) {
    cycle(1, h);
    EXPECT_EQ(p->evict(), 1u);
  }
  cycle(0, 42);  // 42 was inserted 16 * n - 1 inserts ago: still remembered
  cycle(1, 44);
  EXPECT_EQ(p->evict(), 1u);
  EXPECT_EQ(p->evict(), 0u);
  for (block_hash h = 2000; h < 2000 + 16 * n; ++h) {
    cycle(1, h);
    EXPECT_EQ(p->evict(), 1u);
  }
  cycle(0, 42);  // now forgotten: first-time again, and older than 45
  cycle(1, 45);
  EXPECT_EQ(p->evict(), 0u);
  EXPECT_EQ(p->evict(), 1u);
}

TEST(Policies, NamesAreListed) {
  const auto names = policy_names();
  EXPECT_EQ(names.size(), 6u);
  for (const std::string& n : names) EXPECT_EQ(make_policy(n)->name(), n);
  for (const std::string& n : online_policy_names()) EXPECT_FALSE(make_policy(n)->offline());
}

}  // namespace
}  // namespace keel::kv
