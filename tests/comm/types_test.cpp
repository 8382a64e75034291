#include "keel/comm/types.hpp"

#include <gtest/gtest.h>

#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"

namespace keel::comm {
namespace {

TEST(CommTypes, NamesRoundTrip) {
  for (dtype t : k_all_dtypes) {
    EXPECT_EQ(parse_dtype(to_string(t)), t);
    EXPECT_EQ(parse_dtype(short_name(t)), t);
  }
  for (reduce_op op : k_all_reduce_ops) EXPECT_EQ(parse_reduce_op(to_string(op)), op);
  EXPECT_EQ(parse_algorithm("Rabenseifner"), algorithm::rabenseifner);
  EXPECT_EQ(parse_collective("all_gather"), collective::allgather);
  EXPECT_EQ(dtype_size(dtype::bf16), 2u);
  EXPECT_THROW(parse_dtype("float128"), keel::invalid_argument);
  try {
    parse_algorithm("nvls");
    FAIL();
  } catch (const keel::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rabenseifner"), std::string::npos) << e.what();
  }
}

TEST(CommTypes, ErrorsAreKeelErrors) {
  const timeout_error e("allreduce #3: no data from rank 2", "allreduce", 3, 2);
  const keel::error& k = e;
  const std::runtime_error& s = e;
  EXPECT_STREQ(k.what(), s.what());
  EXPECT_EQ(e.seq(), 3u);
  EXPECT_EQ(e.rank(), 2);
  EXPECT_EQ(e.collective(), "allreduce");
}

TEST(CommTypes, EveryCollectiveButSendRecvHasAlgorithms) {
  EXPECT_EQ(algorithms_for(collective::allreduce).size(), 5u);
  EXPECT_TRUE(algorithms_for(collective::sendrecv).empty());
}

}  // namespace
}  // namespace keel::comm
