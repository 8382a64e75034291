// The fault worker's report line: written by run_fault_worker, read by find_fault_line.
#include "keel/comm/faults.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "rank_threads.hpp"

namespace keel::comm {
namespace {

using namespace std::chrono_literals;

TEST(CommFaults, FindsTheErrorLineInALog) {
  EXPECT_FALSE(find_fault_line("READY\n").has_value());
  const auto line =
      find_fault_line("READY\nERROR peer 1700000000123456789 allreduce 42 3 rank 3 died\n");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->kind, "peer");
  EXPECT_EQ(line->realtime_ns, 1700000000123456789LL);
  EXPECT_EQ(line->collective, "allreduce");
  EXPECT_EQ(line->seq, 42u);
  EXPECT_EQ(line->rank, 3);
}

TEST(CommFaults, WorkerReportsTheFirstErrorOfItsLoop) {
  options o;
  o.timeout = 1s;
  o.tune = false;
  std::ostringstream out0;
  const auto errors = test::run_ranks(2, o, [&](communicator& c) {
    if (c.rank() == 0) {
      run_fault_worker(c, 1024, out0);
      return;
    }
    // Rank 1 keeps up for a few rounds, then leaves: rank 0's next allreduce fails.
    std::vector<float> a(1024, 1.0f), b(1024);
    for (int i = 0; i < 5; ++i) c.allreduce(a.data(), b.data(), 1024, dtype::f32, reduce_op::sum);
  });
  test::rethrow_first(errors);
  const std::string log = out0.str();
  EXPECT_NE(log.find("READY\n"), std::string::npos) << log;
  const auto line = find_fault_line(log);
  ASSERT_TRUE(line.has_value()) << log;
  EXPECT_TRUE(line->kind == "peer" || line->kind == "timeout") << log;
  EXPECT_EQ(line->collective, "allreduce");
  EXPECT_EQ(line->rank, 1) << log;
  EXPECT_GT(line->realtime_ns, 0);
}

}  // namespace
}  // namespace keel::comm
