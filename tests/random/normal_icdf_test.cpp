// cuRAND's inverse-CDF normal as keel computes it (src/random/normal_icdf.hpp): the float
// nearest to erfcinv and the fast path's error, against a bisection in long double on a
// sweep of the inputs 32-bit words produce; signs and zeros. Equality with libcurand's values
// is tested through the MTGP32 generator (curand_match_test.cpp, golden file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "../../src/random/normal_icdf.hpp"

namespace kd = keel::random::detail;

namespace {

// erfcinv(y) by bisection on erfc (or erf, for y >= 1/2) in long double, to the last bit.
long double reference_erfcinv(float y) {
  const bool complement = y < 0.5f;
  long double lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    const long double v = complement ? std::erfc(mid) - y : std::erf(mid) - (1.0L - y);
    ((v > 0) == complement ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

// Every word below 4096 and every 9973rd up to 2^31 (both branches, every binade). The fast
// path's error must stay far below the 2^-42 margin at which the long double refinement takes
// over, or a value could round the wrong way unnoticed.
TEST(random_normal_icdf, nearest_float_and_fast_path_error_on_a_sweep) {
  std::size_t checked = 0;
  double worst = 0;
  for (std::uint64_t x = 0; x <= 0x80000000ull; x += (x < 4096 ? 1 : 9973)) {
    const float y = 2.0f * (static_cast<float>(static_cast<std::uint32_t>(x)) * 2.3283064e-10f +
                            2.3283064e-10f / 2.0f);
    const long double exact = reference_erfcinv(y);
    ASSERT_EQ(kd::erfcinv_float(y), static_cast<float>(exact)) << "y = " << y;
    if (y < 1.0f)
      worst =
          std::max(worst, static_cast<double>(std::fabs((kd::erfcinv_fast(y) - exact) / exact)));
    ++checked;
  }
  EXPECT_GT(checked, 200000u);
  EXPECT_LT(worst, 0x1p-48) << "worst relative error of the fast path " << worst;
  RecordProperty("fast_path_worst_relative_error", std::to_string(worst));
}

TEST(random_normal_icdf, signs_and_zero) {
  EXPECT_EQ(kd::erfcinv_float(1.0f), 0.0f);
  EXPECT_FALSE(std::signbit(kd::erfcinv_float(1.0f)));
  // p = 1/2 exactly is not mirrored: -sqrt(2) * +0 = -0, as in cuRAND.
  EXPECT_TRUE(std::signbit(kd::normal_icdf_float(0x80000000u)));
  EXPECT_EQ(kd::normal_icdf_float(0x80000000u), 0.0f);
  for (std::uint32_t x : {0u, 1u, 12345u, 0x7fffffffu, 0x40000000u})
    EXPECT_EQ(kd::normal_icdf_float(x), -kd::normal_icdf_float(0xffffffffu - x)) << x;
  EXPECT_LT(kd::normal_icdf_float(0), -6.0f);
  EXPECT_GT(kd::normal_icdf_float(0xffffffffu), 6.0f);
  EXPECT_TRUE(std::isnan(kd::erfcinv_fast(0x1p-33f)));  // below the table: the slow path
  EXPECT_EQ(kd::erfcinv_float(0x1p-33f), static_cast<float>(reference_erfcinv(0x1p-33f)));
}
