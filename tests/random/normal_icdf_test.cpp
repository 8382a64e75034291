// cuRAND's inverse-CDF normal as keel computes it (src/random/normal_icdf.hpp): the float
// nearest to erfcinv, against a bisection in long double on a sweep of the inputs 32-bit
// words produce; signs and zeros. Equality with libcurand's values is tested through the
// MTGP32 generator (curand_match_test.cpp, golden file).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "../../src/random/normal_icdf.hpp"

namespace kd = keel::random::detail;

namespace {

// erfcinv(y) by bisection on erfc in long double, to the last bit.
float reference_erfcinv(float y) {
  long double lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    const long double v = y < 0.5f ? std::erfc(mid) - y : std::erf(mid) - (1.0L - y);
    if ((v > 0) == (y < 0.5f))
      lo = mid;
    else
      hi = mid;
  }
  return static_cast<float>((lo + hi) / 2);
}

}  // namespace

TEST(random_normal_icdf, nearest_float_on_a_sweep_of_inputs) {
  std::size_t checked = 0;
  // Every 9973rd word below 2^31 (both branches, every binade), plus the ends.
  for (std::uint64_t x = 0; x <= 0x80000000ull; x += (x < 4096 ? 1 : 9973)) {
    const float y = 2.0f * (static_cast<float>(static_cast<std::uint32_t>(x)) * 2.3283064e-10f + 2.3283064e-10f / 2.0f);
    ASSERT_EQ(kd::erfcinv_float(y), reference_erfcinv(y)) << "y = " << y;
    ++checked;
  }
  EXPECT_GT(checked, 200000u);
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
}
