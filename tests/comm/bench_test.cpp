// run_bench: the sizes it walks, the bandwidth arithmetic and the checked columns.
#include "keel/comm/bench.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "keel/comm/dispatch.hpp"
#include "keel/core/error.hpp"
#include "rank_threads.hpp"

namespace keel::comm {
namespace {

TEST(CommBench, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(collective::allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::reduce_scatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::broadcast, 4), 1.0);
}

TEST(CommBench, WalksTheSizesAndChecksEveryColumn) {
  for (collective coll : {collective::allreduce, collective::allgather, collective::reduce,
                          collective::reduce_scatter, collective::alltoall, collective::sendrecv}) {
    bench_options o;
    o.coll = coll;
    o.min_bytes = 64;
    o.max_bytes = 1000;  // 64, 128, 256, 512: 1024 would be past max_bytes
    o.iters = 2;
    o.warmup = 1;
    o.root = 1;
    std::mutex mutex;
    std::vector<bench_result> results;
    int rows_seen = 0;
    const auto errors = test::run_ranks(2, test::quick_options(), [&](communicator& c) {
      bench_result r = run_bench(c, o, [&](const bench_row&) {
        std::lock_guard lock(mutex);
        ++rows_seen;
      });
      std::lock_guard lock(mutex);
      results.push_back(std::move(r));
    });
    test::rethrow_first(errors);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(rows_seen, 8) << to_string(coll);
    for (const bench_result& r : results) {
      ASSERT_EQ(r.rows.size(), 4u) << to_string(coll);
      EXPECT_EQ(r.rows.front().bytes, 64u);
      EXPECT_EQ(r.rows.back().bytes, 512u);
      EXPECT_EQ(r.rows.back().count, is_per_rank(coll) ? 64u : 128u);
      EXPECT_EQ(r.rows.front().root, coll == collective::reduce ? 1 : -1);
      EXPECT_EQ(r.wrong, 0) << to_string(coll);
      for (const bench_row& row : r.rows) {
        EXPECT_GT(row.out_of_place.time_us, 0);
        EXPECT_DOUBLE_EQ(row.in_place.busbw, row.in_place.algbw * busbw_factor(coll, 2));
      }
    }
    // The slowest rank's time: every rank reports the same rows.
    EXPECT_EQ(results[0].rows[2].in_place.time_us, results[1].rows[2].in_place.time_us);
  }
}

TEST(CommBench, RefusesWhatCannotBeMeasured) {
  const auto errors = test::run_ranks(1, test::quick_options(), [](communicator& c) {
    bench_options o;
    o.coll = collective::barrier;
    EXPECT_THROW(run_bench(c, o), keel::invalid_argument);
    o.coll = collective::allreduce;
    o.min_bytes = 16;
    o.max_bytes = 8;
    EXPECT_THROW(run_bench(c, o), keel::invalid_argument);
    o.max_bytes = 16;
    o.root = 1;
    EXPECT_THROW(run_bench(c, o), keel::invalid_argument);
  });
  test::rethrow_first(errors);
}

}  // namespace
}  // namespace keel::comm
