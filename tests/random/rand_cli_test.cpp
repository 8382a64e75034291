// `keel rand` from the outside: values as libcurand gives them, the binary format, the
// bench's CPU-time mode, and bad input answered with one "keel: ..." line and exit status 2.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/random/generator.hpp"
#include "process.hpp"

namespace {

using keel::test::run_keel;

TEST(random_cli, philox_normal_starts_as_curand) {
  const auto r = run_keel({"rand", "normal", "--seed", "1234", "--count", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "-1.61649048\n1.22915542\n-1.56054044\n0.464621365\n");
}

TEST(random_cli, bin_format_is_the_values_back_to_back) {
  const auto r = run_keel({"rand", "raw", "--generator", "xorwow", "--seed", "42", "--offset", "3", "--count", "1000",
                           "--format", "bin"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.size(), 4000u);
  keel::random::generator g(keel::random::rng_type::xorwow);
  g.set_seed(42);
  g.set_offset(3);
  std::vector<std::uint32_t> expected(1000);
  ASSERT_EQ(g.generate(expected.data(), expected.size()), keel::random::status::success);
  EXPECT_EQ(std::memcmp(r.out.data(), expected.data(), 4000), 0);
}

TEST(random_cli, bench_by_cpu_time_has_single_thread_rows_only) {
  const auto r = run_keel({"rand", "bench", "--count", "65536", "--repeats", "1", "--cpu-time", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["clock"], "thread-cpu");
  ASSERT_FALSE(doc["results"].empty());
  for (const auto& row : doc["results"]) {
    EXPECT_EQ(row["threads"], 1);
    EXPECT_GT(row["keel_gsps"].get<double>(), 0.0);
  }
}

TEST(random_cli, bad_input_is_one_line_and_exit_2) {
  const std::vector<std::vector<std::string>> cases = {
      {"rand", "normal", "--generator", "nope"},
      {"rand", "normal", "--generator", "xorwow", "--count", "3"},  // odd count: LENGTH_NOT_MULTIPLE
      {"rand", "uniform", "--ordering", "dynamic"},
      {"rand", "uniform", "--generator", "mtgp32"},
      {"rand", "raw", "--format", "csv"},
      {"rand", "raw", "--count", "-5"},
      {"rand", "raw", "--out", "/nonexistent-dir/x.bin"},
  };
  for (const auto& args : cases) {
    const auto r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_EQ(keel::test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("keel: ", 0), 0u) << r.err;
  }
}

}  // namespace
