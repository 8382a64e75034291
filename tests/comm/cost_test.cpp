// keel::comm's cost estimates (cost.hpp): the algorithm table's alpha-beta-gamma model without
// a communicator.
#include "keel/comm/cost.hpp"

#include <gtest/gtest.h>

#include "keel/core/error.hpp"

namespace keel::comm {
namespace {

link_model link() {
  link_model m;
  m.alpha = 2e-6;
  m.beta = 1.0 / 100e9;
  m.gamma = 1.0 / 1000e9;
  return m;
}

TEST(CommCost, AlltoallIsTheDirectAlgorithmsMessagesAndShare) {
  // Each of 8 ranks sends 7 blocks of S/8, all at once: 7 messages, 7/8 of S on its link.
  const double S = 64e6;
  const collective_estimate e = estimate_collective(collective::alltoall, 8, S, link());
  EXPECT_TRUE(e.modelled);
  EXPECT_EQ(e.algo, algorithm::direct);
  EXPECT_DOUBLE_EQ(e.seconds, 7 * 2e-6 * 1.5 + 7.0 / 8 * S / 100e9);
  // The same bytes cost what an allgather's direct algorithm costs for its output.
  EXPECT_DOUBLE_EQ(
      e.seconds,
      estimate_collective(collective::allgather, 8, S, link(), algorithm::direct).seconds);
  EXPECT_DOUBLE_EQ(estimate_collective(collective::alltoall, 1, S, link()).seconds, 0);
}

TEST(CommCost, PicksTheCheapestAlgorithmAndHonoursARequest) {
  const link_model m = link();
  const collective_estimate small = estimate_collective(collective::allreduce, 8, 1024, m);
  const collective_estimate large = estimate_collective(collective::allreduce, 8, 1e9, m);
  EXPECT_TRUE(small.modelled && large.modelled);
  EXPECT_NE(small.algo, algorithm::ring);  // latency-bound: fewer than 2(n-1) messages
  EXPECT_LT(small.seconds, 2 * 7 * m.alpha);
  const collective_estimate ring =
      estimate_collective(collective::allreduce, 8, 1e9, m, algorithm::ring);
  EXPECT_EQ(ring.algo, algorithm::ring);
  EXPECT_LE(large.seconds, ring.seconds);
  // Bandwidth-bound: at least the 2 (n-1)/n of the buffer every allreduce moves per rank.
  EXPECT_GE(large.seconds, 2 * 7.0 / 8 * 1e9 * m.beta);
}

TEST(CommCost, BarrierIsNotModelledAndBadTermsAreRefused) {
  EXPECT_FALSE(estimate_collective(collective::barrier, 4, 0, link()).modelled);
  EXPECT_THROW(estimate_collective(collective::allreduce, 0, 1, link()), invalid_argument);
  EXPECT_THROW(estimate_collective(collective::allreduce, 4, -1, link()), invalid_argument);
  link_model bad = link();
  bad.alpha = -1;
  EXPECT_THROW(estimate_collective(collective::allreduce, 4, 1, bad), invalid_argument);
}

}  // namespace
}  // namespace keel::comm
