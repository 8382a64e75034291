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

TEST(random_battery, text_and_json_report_every_test) {
  const auto r = kr::run_battery(std::size_t{1} << 16);
  EXPECT_TRUE(r.failure.empty()) << r.failure;
  const std::string text = kr::to_text(r);
  EXPECT_EQ(text.rfind("philox4_32_10, 65536 samples (alpha 0.0001):\n", 0), 0u) << text;
  EXPECT_NE(text.find("10000 streams seeded 0..9999, 64 steps each:\n"), std::string::npos);
  EXPECT_NE(text.find("  LCG per thread  "), std::string::npos);
  const std::string tail = "battery: pass\ninter-stream: LCG fails, Philox passes\n";
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  const nlohmann::json j = kr::to_json(r);
  EXPECT_EQ(j.at("samples"), 65536);
  EXPECT_EQ(j.at("generator"), "philox4_32_10");
  EXPECT_EQ(j.at("battery").size(), r.battery.size());
  EXPECT_EQ(j.at("inter_stream").at("lcg_per_thread_seed").size(), 2u);
  EXPECT_EQ(j.at("battery_pass"), true);
  EXPECT_EQ(j.at("lcg_fails_philox_passes"), true);
}

TEST(random_battery, a_failed_outcome_is_reported_not_thrown) {
  kr::battery_report r;
  r.samples = 1000;
  EXPECT_NE(kr::to_text(r).find("battery: FAIL\ninter-stream: unexpected outcome\n"),
            std::string::npos);
}
