// run_collective and the buffer shapes it shares with the self-test and the benchmark.
#include "keel/comm/dispatch.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "rank_threads.hpp"

namespace keel::comm {
namespace {

TEST(CommDispatch, BufferShapesFollowTheCollective) {
  EXPECT_EQ(input_count(collective::allreduce, 5, 3), 5u);
  EXPECT_EQ(output_count(collective::allreduce, 5, 3), 5u);
  EXPECT_EQ(input_count(collective::reduce_scatter, 5, 3), 15u);
  EXPECT_EQ(output_count(collective::reduce_scatter, 5, 3), 5u);
  EXPECT_EQ(input_count(collective::allgather, 5, 3), 5u);
  EXPECT_EQ(output_count(collective::allgather, 5, 3), 15u);
  EXPECT_EQ(input_count(collective::alltoall, 5, 3), 15u);
  EXPECT_EQ(output_count(collective::alltoall, 5, 3), 15u);
  EXPECT_TRUE(is_reduction(collective::reduce));
  EXPECT_FALSE(is_reduction(collective::broadcast));
  EXPECT_TRUE(is_per_rank(collective::alltoall));
  EXPECT_FALSE(is_per_rank(collective::allreduce));
}

TEST(CommDispatch, RunsEachCollectiveByItsEnum) {
  constexpr int n = 3;
  const auto errors = test::run_ranks(n, test::quick_options(), [](communicator& c) {
    const int me = c.rank();
    std::vector<std::int32_t> in(n, me + 1), out(n, -1);
    run_collective(c, collective::allreduce, in.data(), out.data(), 1, dtype::i32, reduce_op::sum,
                   0);
    EXPECT_EQ(out[0], 6);
    run_collective(c, collective::broadcast, in.data(), out.data(), 1, dtype::i32, reduce_op::sum,
                   2);
    EXPECT_EQ(out[0], 3);
    run_collective(c, collective::allgather, in.data(), out.data(), 1, dtype::i32, reduce_op::sum,
                   0);
    EXPECT_EQ(out, (std::vector<std::int32_t>{1, 2, 3}));
    // sendrecv is a ring: rank r receives rank r-1's input.
    out.assign(n, -1);
    run_collective(c, collective::sendrecv, in.data(), out.data(), 1, dtype::i32, reduce_op::sum,
                   0);
    EXPECT_EQ(out[0], (me + n - 1) % n + 1);
    const auto before = c.seq();
    run_collective(c, collective::barrier, nullptr, nullptr, 0, dtype::i32, reduce_op::sum, 0);
    EXPECT_GT(c.seq(), before);
  });
  test::rethrow_first(errors);
}

}  // namespace
}  // namespace keel::comm
