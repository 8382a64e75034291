// cuRAND's inverse-CDF normals as keel computes them (src/random/engines/normal_icdf.hpp): the
// float nearest to erfcinv and the fast path's error, keel's own double erfcinv, and libcurand's
// (with the coefficients, when they are available) against a bisection in long double on a
// sweep of the inputs 32-bit words produce; signs and zeros; the vector floats and doubles
// against the scalar ones. Equality with libcurand's values is tested through the generators
// (curand_match_test.cpp, golden file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "keel/random/erfcinv_tables.hpp"

#include "../../src/random/cpu_kernels/simd.hpp"
#include "../../src/random/engines/normal_icdf.hpp"

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

// The same for a double a = 2p.
long double reference_erfcinv_double(double a) {
  const bool complement = a<0.5, negative = a> 1.0;
  const long double target = complement ? a : negative ? a - 1.0L : 1.0L - a;
  long double lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    const long double v = complement ? std::erfc(mid) - target : std::erf(mid) - target;
    ((v > 0) == complement ? lo : hi) = mid;
  }
  return negative ? -(lo + hi) / 2 : (lo + hi) / 2;
}

// The words of the sweeps: small ones (the far tail), a stride through the rest, p = 1/2.
std::vector<std::uint32_t> sweep_words(std::uint32_t small, std::uint32_t stride) {
  std::vector<std::uint32_t> w;
  for (std::uint64_t x = 0; x <= 0x80000000ull; x += (x < small ? 1 : stride))
    w.push_back(static_cast<std::uint32_t>(x));
  w.push_back(0x80000000u);
  return w;
}

// Distance in ulps of a double from a long double.
double ulps(double x, long double exact) {
  const double e = static_cast<double>(exact);
  return static_cast<double>(std::fabs(x - exact)) /
         (std::nextafter(std::fabs(e), INFINITY) - std::fabs(e));
}

}  // namespace

// keel's own double erfcinv, the stand-in without libcurand's coefficients: within an ulp.
TEST(random_normal_icdf, keel_double_erfcinv_is_within_an_ulp) {
  double worst = 0;
  for (std::uint32_t x : sweep_words(1024, 1000003)) {
    const double a = 2.0 * keel::random::uniform_double_32_mid(x);
    worst = std::max(worst, ulps(kd::erfcinv_keel(a), reference_erfcinv_double(a)));
  }
  EXPECT_LE(worst, 1.0);
  RecordProperty("keel_double_worst_ulps", std::to_string(worst));
}

// libcurand's algorithm with the coefficients read at run time: Blair et al.'s accuracy, to a
// few ulps of double rounding.
TEST(random_normal_icdf, curand_double_erfcinv_is_accurate) {
  const kd::blair_coefficients* b = kd::curand_erfcinv();
  if (!b) GTEST_SKIP() << keel::random::erfcinv_default_tables().description;
  double worst = 0;
  for (std::uint32_t x : sweep_words(1024, 1000003)) {
    const double a = 2.0 * keel::random::uniform_double_32_mid(x);
    worst = std::max(worst, ulps(kd::erfcinv_blair(*b, a), reference_erfcinv_double(a)));
  }
  EXPECT_LE(worst, 8.0);
  RecordProperty("curand_double_worst_ulps", std::to_string(worst));
}

// The vector kernels write the scalar function's bits at every SIMD level this CPU has, for
// any count (a vector prefix, then a scalar remainder).
template <class T, class Scalar, class Vector>
void expect_vectors_equal_scalar(Scalar scalar, Vector vector) {
  namespace simd = kd::simd;
  std::vector<std::uint32_t> w = sweep_words(3000, 65521);
  for (std::uint32_t x : sweep_words(3000, 65521)) w.push_back(~x);
  std::vector<T> expect(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) expect[i] = scalar(w[i]);
  const simd::level saved = simd::active_level();
  for (const auto l : {simd::level::scalar, simd::level::avx2, simd::level::avx512}) {
    simd::force_level(l);
    if (simd::active_level() != l) continue;
    for (std::size_t n : {w.size(), std::size_t{1}, std::size_t{37}, std::size_t{2049}}) {
      std::vector<T> z(n);
      vector(w.data(), n, z.data());
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::memcmp(&z[i], &expect[i], sizeof(T)), 0)
            << "level " << static_cast<int>(l) << ", word " << w[i];
    }
  }
  simd::force_level(saved);
}

TEST(random_normal_icdf, vector_doubles_equal_scalar_ones) {
  expect_vectors_equal_scalar<double>(kd::normal_icdf_double, kd::normal_icdf_doubles);
}

TEST(random_normal_icdf, vector_floats_equal_scalar_ones) {
  expect_vectors_equal_scalar<float>(kd::normal_icdf_float, kd::normal_icdf_floats);
}

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
  // Doubles: the same symmetry, and a tiny positive value for the word 2^31 (2p = 1 + 2^-32
  // gives a tiny negative erfcinv, times -sqrt(2)).
  for (std::uint32_t x : {0u, 1u, 12345u, 0x7fffffffu, 0x40000000u})
    EXPECT_EQ(kd::normal_icdf_double(x), -kd::normal_icdf_double(0xffffffffu - x)) << x;
  EXPECT_GT(kd::normal_icdf_double(0x80000000u), 0.0);
  EXPECT_LT(kd::normal_icdf_double(0x80000000u), 1e-9);
  EXPECT_LT(kd::normal_icdf_double(0), -6.0);
}
