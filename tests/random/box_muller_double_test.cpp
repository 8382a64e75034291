// cuRAND's double Box-Muller, vectorized (src/random/engines/box_muller_double.hpp): the vector
// kernels write the scalar function's bits at every SIMD level this CPU has, on random words
// and on the extreme ones, for any count; and glibc's log, sin and cos stay within the error
// the kernels' margin assumes, measured against long double. Equality with libcurand's values
// is tested through the generators (curand_match_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "keel/random/distributions.hpp"

#include "../../src/random/cpu_kernels/glibc_math.hpp"
#include "../../src/random/cpu_kernels/simd.hpp"
#include "../../src/random/engines/box_muller_double.hpp"

namespace kd = keel::random::detail;
namespace kr = keel::random;

namespace {

// 4 words per pair: random ones (xorshift), then the extremes of u and of the angle.
std::vector<std::uint32_t> test_words(std::size_t pairs) {
  std::vector<std::uint32_t> w;
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < 4 * pairs; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    w.push_back(static_cast<std::uint32_t>(s >> 16));
  }
  // u = 1 (log 0), the smallest u, the smallest and largest angles.
  for (std::uint32_t x : {0x001FFFFFu, 0u})
    for (std::uint32_t y : {0u, 0x001FFFFFu})
      w.insert(w.end(), {x, x == 0 ? 0u : 0xFFFFFFFFu, y, y == 0 ? 0u : 0xFFFFFFFFu});
  return w;
}

}  // namespace

TEST(random_box_muller_double, vector_pairs_equal_scalar_ones) {
  namespace simd = kd::simd;
  const std::vector<std::uint32_t> w = test_words(100000);
  const std::size_t pairs = w.size() / 4;
  std::vector<double> expect(2 * pairs);
  for (std::size_t j = 0; j < pairs; ++j) {
    const kr::double_pair p =
        kr::box_muller_double<kd::glibc_math>(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
    expect[2 * j] = p.x;
    expect[2 * j + 1] = p.y;
  }
  EXPECT_EQ(expect[2 * pairs - 8], 0.0) << "u = 1 gives a zero radius";
  const simd::level saved = simd::active_level();
  for (const auto l : {simd::level::scalar, simd::level::avx2, simd::level::avx512}) {
    simd::force_level(l);
    if (simd::active_level() != l) continue;
    for (std::size_t n : {pairs, std::size_t{1}, std::size_t{11}, std::size_t{4099}}) {
      const std::size_t first = pairs - n;  // the extremes are at the end
      std::vector<double> z(2 * n);
      kd::box_muller_doubles(w.data() + 4 * first, n, z.data());
      for (std::size_t i = 0; i < 2 * n; ++i)
        ASSERT_EQ(std::memcmp(&z[i], &expect[2 * first + i], sizeof(double)), 0)
            << "level " << static_cast<int>(l) << ", pair " << first + i / 2;
    }
  }
  simd::force_level(saved);
}

// The kernels' margin holds if glibc is within 1 - k_box_muller_safe_ulps - 0.003 ulps of the
// true value; measured here against long double (itself within 2^-11 ulp of a double) on the
// inputs Box-Muller gives them. glibc 2.36 reaches about 0.518.
TEST(random_box_muller_double, glibc_stays_within_the_margin) {
  const std::vector<std::uint32_t> w = test_words(200000);
  double worst[3] = {0, 0, 0};
  auto ulps = [](double got, long double exact) {
    int e;
    std::frexp(got, &e);
    return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) /
                               std::ldexp(1.0L, e - 53));
  };
  for (std::size_t j = 0; j + 4 <= w.size(); j += 4) {
    const double u = kr::uniform_double(w[j], w[j + 1]);
    const double a = kr::box_muller_angle(w[j + 2], w[j + 3]);
    if (u != 1.0) worst[0] = std::max(worst[0], ulps(::log(u), logl(u)));
    worst[1] = std::max(worst[1], ulps(::sin(a), sinl(a)));
    worst[2] = std::max(worst[2], ulps(::cos(a), cosl(a)));
  }
  const double bound = 1.0 - kd::k_box_muller_safe_ulps - 0.003;
  const char* names[] = {"log", "sin", "cos"};
  for (int f = 0; f < 3; ++f) {
    EXPECT_LT(worst[f], bound) << names[f];
    RecordProperty(std::string("glibc_worst_ulps_") + names[f], std::to_string(worst[f]));
  }
}
