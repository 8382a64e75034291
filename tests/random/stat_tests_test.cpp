// The statistical battery behind `keel rand test`: p-values of known cases, Philox passing,
// and the per-thread-seeded LCG failing the inter-stream test.
#include <gtest/gtest.h>

#include <vector>

#include "keel/random/generator.hpp"
#include "keel/random/philox.hpp"
#include "keel/random/stat_tests.hpp"

namespace kr = keel::random;

TEST(random_stat_tests, chi_square_tail_probabilities) {
  // Upper tails: chi2(1) at 3.841 is 0.05, chi2(10) at 18.307 is 0.05, chi2(2) at x is e^(-x/2).
  EXPECT_NEAR(kr::chi_square_p(3.841459, 1), 0.05, 1e-5);
  EXPECT_NEAR(kr::chi_square_p(18.307038, 10), 0.05, 1e-5);
  EXPECT_NEAR(kr::chi_square_p(4.0, 2), 0.1353352832, 1e-8);
}

TEST(random_stat_tests, philox_passes_and_a_constant_fails) {
  kr::generator g(kr::rng_type::philox4_32_10);
  g.set_seed(7);
  const std::size_t n = 1 << 16;
  std::vector<float> u(n), z(n);
  ASSERT_EQ(g.generate_uniform(u.data(), n), kr::status::success);
  ASSERT_EQ(g.generate_normal(z.data(), n, 0, 1), kr::status::success);
  EXPECT_GT(kr::chi_square_uniform(u, 100).p_value, 1e-4);
  EXPECT_GT(kr::kolmogorov_smirnov_normal(z).p_value, 1e-4);
  EXPECT_GT(kr::anderson_darling_normal(z).p_value, 1e-4);
  std::vector<float> flat(n, 0.25f);
  EXPECT_LT(kr::chi_square_uniform(flat, 100).p_value, 1e-10);
  std::vector<float> shifted(z);
  for (float& v : shifted) v += 0.1f;
  EXPECT_LT(kr::kolmogorov_smirnov_normal(shifted).p_value, 1e-10);
}

TEST(random_stat_tests, per_thread_lcg_fails_and_philox_passes_across_streams) {
  const kr::stream_fn lcg = [](std::uint64_t s, std::size_t k, std::uint32_t* out) {
    std::uint32_t x = static_cast<std::uint32_t>(s);
    for (std::size_t i = 0; i < k; ++i) out[i] = x = 1664525u * x + 1013904223u;
  };
  const kr::stream_fn philox = [](std::uint64_t s, std::size_t k, std::uint32_t* out) {
    for (std::size_t i = 0; i < k; i += 4) {
      const auto c = kr::philox4x32_10(kr::philox_ctr_of(i / 4, s), kr::philox_key_from_seed(42));
      for (std::size_t j = 0; j < 4 && i + j < k; ++j) out[i + j] = c.v[j];
    }
  };
  EXPECT_LT(kr::inter_stream_differences(lcg, 2000, 32).p_value, 1e-10);
  EXPECT_GT(kr::inter_stream_differences(philox, 2000, 32).p_value, 1e-4);
}
