#include "keel/comm/types.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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

TEST(CommTypes, HalfConversionMatchesFloat16Hardware) {
  // Every finite half survives half -> float -> half; rounding matches _Float16.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << h;
  }
#if defined(__FLT16_MAX__)
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float f;
    const std::uint32_t bits = (state & 0x8fffffffu) | ((state & 1u) << 30);
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(float_to_half(f), want) << f;
  }
#endif
}

TEST(CommTypes, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  float f;
  std::uint32_t bits = 0x3f808000u;  // halfway between 0x3f80 and 0x3f81: even wins
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f80);
  bits = 0x3f818000u;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f82);
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
