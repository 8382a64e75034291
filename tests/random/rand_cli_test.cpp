// `keel rand` from the outside: values as libcurand gives them, the binary format, and bad
// input answered with one "keel: ..." line and exit status 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

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

// libcurand's first MT19937 values for seed 1234 (positions 0, 1, 2: std::mt19937(1234)'s
// outputs 0, 113 and 170).
TEST(random_cli, mt19937_raw_starts_as_curand) {
  const auto r = run_keel({"rand", "raw", "--generator", "mt19937", "--seed", "1234", "--count", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "822569775\n292421642\n643530888\n");
}

// The SIMD level (KEEL_RANDOM_SIMD caps it) never changes the bits: the jump, block, row and
// inverse-CDF kernels are compiled per instruction set.
TEST(random_cli, mt19937_output_does_not_depend_on_the_simd_level) {
  for (const auto& [dist, count] : {std::pair{"raw", "300001"}, std::pair{"normal", "20001"}}) {
    const std::vector<std::string> args = {"rand", dist, "--generator", "mt19937", "--seed", "7", "--count", count,
                                           "--format", "bin"};
    const auto best = run_keel(args);
    ASSERT_EQ(best.exit_code, 0) << best.err;
    for (const char* level : {"scalar", "avx2"}) {
      ::setenv("KEEL_RANDOM_SIMD", level, 1);
      const auto capped = run_keel(args);
      ::unsetenv("KEEL_RANDOM_SIMD");
      ASSERT_EQ(capped.exit_code, 0) << capped.err;
      EXPECT_TRUE(capped.out == best.out) << dist << " differs at level " << level;
    }
  }
}

TEST(random_cli, bad_input_is_one_line_and_exit_2) {
  const std::vector<std::vector<std::string>> cases = {
      {"rand", "normal", "--generator", "nope"},
      {"rand", "normal", "--generator", "xorwow", "--count", "3"},  // odd count: LENGTH_NOT_MULTIPLE
      {"rand", "uniform", "--ordering", "dynamic"},
      {"rand", "uniform", "--generator", "mtgp32"},
      {"rand", "raw", "--generator", "mt19937", "--offset", "5"},  // libcurand refuses offsets: TYPE_ERROR
      {"rand", "normal-double", "--generator", "mt19937"},        // not reproduced: TYPE_ERROR
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
