// keel::random::run_battery: what `keel rand test` reports, from the library.
#include "keel/random/battery.hpp"

#include <gtest/gtest.h>

#include "keel/random/generator.hpp"

namespace kr = keel::random;

TEST(random_battery, philox_passes_and_the_lcg_trap_is_shown) {
  const auto r = kr::run_battery(std::size_t{1} << 16);
  EXPECT_EQ(r.samples, std::size_t{1} << 16);
  EXPECT_TRUE(r.battery_pass);
  EXPECT_TRUE(r.trap_shown);
  EXPECT_LT(r.lcg_differences.p_value, r.alpha);
  EXPECT_GT(r.philox_differences.p_value, r.alpha);
  EXPECT_EQ(r.battery.size(), 5 + kr::moments_normal(std::vector<float>(100, 0.5f)).size());
}

TEST(random_battery, tests_the_seeded_philox_stream) {
  const std::size_t n = 20000;
  kr::generator g(kr::rng_type::philox4_32_10);
  g.set_seed(20240611);
  std::vector<float> u(n), z(n);
  ASSERT_EQ(g.generate_uniform(u.data(), n), kr::status::success);
  ASSERT_EQ(g.generate_normal(z.data(), n, 0, 1), kr::status::success);
  const auto r = kr::run_battery(n);
  ASSERT_GE(r.battery.size(), 4u);
  EXPECT_EQ(r.battery[0].statistic, kr::chi_square_uniform(u, 1000).statistic);
  EXPECT_EQ(r.battery[1].statistic, kr::serial_correlation(u).statistic);
  EXPECT_EQ(r.battery[2].statistic, kr::kolmogorov_smirnov_normal(z).statistic);
  EXPECT_EQ(r.battery.back().statistic, kr::serial_correlation(z).statistic);
}
