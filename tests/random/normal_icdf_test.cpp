// cuRAND's inverse-CDF normal (src/random/normal_icdf.cpp): keel's Chebyshev fits of erfcinv
// stay well inside the margin that decides the float rounding, and the known values hold.
#include <gtest/gtest.h>

#include <cmath>

#include "../../src/random/normal_icdf.hpp"

namespace kd = keel::random::detail;

TEST(random_normal_icdf, fit_error_is_far_below_the_rounding_margin) {
  // The margin is 1e-13 (normal_icdf.cpp); the fits reach a few 1e-16.
  EXPECT_LT(kd::erfcinv_fit_error(20000), 1e-14);
}

TEST(random_normal_icdf, known_values) {
  EXPECT_EQ(kd::erfcinv_float(1.0f), 0.0f);
  // erfcinv(y) is correctly rounded: compare with a long double solution of erfc(x) = y.
  for (float y : {1e-9f, 2.3283064e-10f, 0.001f, 0.0625f, 0.25f, 0.5f, 0.75f, 0.999f, 0.99999994f}) {
    long double lo = 0, hi = 7;
    for (int i = 0; i < 100; ++i) ((erfcl((lo + hi) / 2) > y) ? lo : hi) = (lo + hi) / 2;
    EXPECT_EQ(kd::erfcinv_float(y), static_cast<float>((lo + hi) / 2)) << y;
  }
  // Words 0 and ~0 are the extreme normals (p = 2^-33 and its mirror), 2^31 the zero.
  EXPECT_NEAR(kd::normal_icdf_float(0), -6.3379f, 1e-3);
  EXPECT_EQ(kd::normal_icdf_float(0xffffffffu), -kd::normal_icdf_float(0));
  EXPECT_EQ(kd::normal_icdf_float(0x80000000u), 0.0f);
  float z[3];
  const std::uint32_t x[3] = {0x31076b2fu, 0x116e000au, 0xa8638f97u};
  kd::normal_icdf_float(x, z, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(z[i], kd::normal_icdf_float(x[i]));
}
