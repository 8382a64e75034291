// keel::random::run_bench: the rows, their order and their clock, on tiny counts (the shape,
// not the speed).
#include "keel/random/bench.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"

namespace kr = keel::random;

TEST(random_bench, rows_of_one_generator_in_order_as_they_are_measured) {
  kr::bench_options o;
  o.count = 4096;
  o.repeats = 1;
  o.only = kr::rng_type::sobol32;
  std::vector<kr::bench_row> seen;
  const auto rows = kr::run_bench(o, [&](const kr::bench_row& r) { seen.push_back(r); });
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<kr::distribution> dists = {
      kr::distribution::raw, kr::distribution::uniform, kr::distribution::normal,
      kr::distribution::normal_double, kr::distribution::poisson};
  ASSERT_EQ(rows.size(), dists.size() * (all > 1 ? 2 : 1));
  ASSERT_EQ(seen.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::size_t per = all > 1 ? 2 : 1;
    EXPECT_EQ(rows[i].type, kr::rng_type::sobol32);
    EXPECT_EQ(rows[i].dist, dists[i / per]);
    EXPECT_EQ(rows[i].threads, i % per == 0 ? 1u : all);
    EXPECT_GT(rows[i].keel_gsps, 0.0);
    EXPECT_EQ(rows[i].curand_gsps.has_value(), kr::curand_reference::get().available());
    EXPECT_EQ(seen[i].dist, rows[i].dist);
    EXPECT_EQ(seen[i].threads, rows[i].threads);
  }
}

TEST(random_bench, cpu_time_keeps_single_thread_rows_only) {
  kr::bench_options o;
  o.count = 4096;
  o.repeats = 2;
  o.cpu_time = true;
  o.only = kr::rng_type::sobol32;
  const auto rows = kr::run_bench(o);
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) EXPECT_EQ(r.threads, 1u);
}

// MTGP32 and scrambled Sobol32 run on tables keel does not ship: asked for alone without them,
// the bench says why instead of printing nothing.
TEST(random_bench, generators_with_tables_run_with_them_or_say_why_not) {
  kr::bench_options o;
  o.count = 4096;
  o.repeats = 1;
  o.cpu_time = true;
  o.only = kr::rng_type::mtgp32;
  if (kr::mtgp32_default_tables().tables)
    EXPECT_EQ(kr::run_bench(o).size(), 5u);
  else
    EXPECT_THROW(kr::run_bench(o), keel::invalid_argument);
  o.only = kr::rng_type::scrambled_sobol32;
  if (kr::sobol32_scramble_tables()) {
    const auto rows = kr::run_bench(o);
    ASSERT_EQ(rows.size(), 5u);
    for (const auto& r : rows) EXPECT_EQ(r.type, kr::rng_type::scrambled_sobol32);
  } else {
    EXPECT_THROW(kr::run_bench(o), keel::invalid_argument);
  }
}

TEST(random_bench, a_refused_call_throws) {
  kr::bench_options o;
  o.count = 4097;  // odd: normals need pairs on XORWOW
  o.repeats = 1;
  o.cpu_time = true;
  o.only = kr::rng_type::xorwow;
  EXPECT_THROW(kr::run_bench(o), keel::invalid_argument);
}

TEST(random_bench, a_row_prints_as_one_line_and_the_document_lists_rows) {
  kr::bench_row r;
  r.type = kr::rng_type::xorwow;
  r.dist = kr::distribution::normal;
  r.threads = 4;
  r.keel_gsps = 2.5;
  EXPECT_EQ(kr::to_text(r),
            "xorwow            normal   threads  4  keel   2.500 G/s  curand   0.000 G/s  ratio   "
            "0.00\n");
  kr::bench_row with = r;
  with.curand_gsps = 1.25;
  EXPECT_EQ(kr::to_text(with),
            "xorwow            normal   threads  4  keel   2.500 G/s  curand   1.250 G/s  ratio   "
            "2.00\n");
  kr::bench_options o;
  o.count = 100;
  o.cpu_time = true;
  const nlohmann::json j = kr::to_json(o, {r, with});
  EXPECT_EQ(j.at("count"), 100);
  EXPECT_EQ(j.at("clock"), "thread-cpu");
  ASSERT_EQ(j.at("results").size(), 2u);
  EXPECT_TRUE(j.at("results").at(0).at("curand_gsps").is_null());
  EXPECT_TRUE(j.at("results").at(0).at("ratio").is_null());
  EXPECT_EQ(j.at("results").at(1).at("ratio"), 2.0);
  EXPECT_EQ(j.at("results").at(1).at("generator"), "xorwow");
  EXPECT_EQ(j.at("libcurand"), kr::curand_reference::get().version());
}
