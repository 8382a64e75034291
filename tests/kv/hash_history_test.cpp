// hash_history (private to the policies) against a plain model: a FIFO of the last `window`
// records with a count per hash.
#include "hash_history.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

namespace keel::kv::detail {
namespace {

TEST(HashHistory, ForgetsARecordAfterWindowMoreRecords) {
  hash_history h;
  h.reset(3);
  EXPECT_FALSE(h.contains(7));
  h.add(7);
  EXPECT_TRUE(h.contains(7));
  h.add(1);
  h.add(2);
  EXPECT_TRUE(h.contains(7));  // records 7, 1, 2
  h.add(3);
  EXPECT_FALSE(h.contains(7));  // records 1, 2, 3
  EXPECT_TRUE(h.contains(1));
  // A hash recorded again stays for `window` records after its latest record.
  h.add(1);
  h.add(4);
  h.add(5);
  EXPECT_TRUE(h.contains(1));  // records 1, 4, 5
  h.add(6);
  EXPECT_FALSE(h.contains(1));
  h.reset(3);
  EXPECT_FALSE(h.contains(6));
}

TEST(HashHistory, MatchesAFifoModelOnRandomStreams) {
  for (const std::size_t window : {1u, 2u, 7u, 64u, 1000u}) {
    SCOPED_TRACE(window);
    hash_history h;
    h.reset(window);
    std::deque<block_hash> fifo;
    std::map<block_hash, int> count;
    std::mt19937_64 rng(window);
    // Few distinct hashes (many repeats, long probe runs) and some spread over 64 bits.
    for (int step = 0; step < 20000; ++step) {
      const block_hash x = step % 3 ? rng() % (2 * window + 3) : rng();
      h.add(x);
      fifo.push_back(x);
      ++count[x];
      if (fifo.size() > window) {
        if (--count[fifo.front()] == 0) count.erase(fifo.front());
        fifo.pop_front();
      }
      const block_hash probe = step % 2 ? x : rng() % (2 * window + 3);
      ASSERT_EQ(h.contains(probe), count.count(probe) != 0) << "step " << step;
    }
    for (block_hash x = 0; x < 2 * window + 3; ++x) {
      ASSERT_EQ(h.contains(x), count.count(x) != 0) << x;
    }
  }
}

}  // namespace
}  // namespace keel::kv::detail
