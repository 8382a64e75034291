// The SIMD kernels against the scalar reference: the vector logf/sincosf against glibc on a
// strided subset of their domain (`keel rand verify --math` runs all of it), and every
// generator's fast paths at each SIMD level (KEEL_RANDOM_SIMD, in child processes: the level
// is chosen once per process) against the scalar level, for offsets and lengths that hit
// the unaligned heads and tails and, for Philox, the streaming path of large outputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "keel/random/verify.hpp"
#include "process.hpp"

namespace {

namespace kr = keel::random;

TEST(random_simd, vector_math_equals_glibc_on_a_subset) {
  const auto checks = kr::check_vector_math(251);
  for (const auto& m : checks) {
    EXPECT_GT(m.logf_inputs, 1000000u) << m.level;
    EXPECT_GT(m.sincosf_inputs, 1000000u) << m.level;
    EXPECT_EQ(m.logf_mismatches, 0u)
        << m.level << ": first at bits " << std::hex << m.first_mismatch_bits;
    EXPECT_EQ(m.sincosf_mismatches, 0u)
        << m.level << ": first at bits " << std::hex << m.first_mismatch_bits;
  }
  if (checks.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
}

// `keel rand DIST ... --format bin` at a forced SIMD level.
std::string values_at(const char* level, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/env", std::string("KEEL_RANDOM_SIMD=") + level,
                                std::string(KEEL_BINARY_DIR) + "/tools/keel/keel", "rand"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--format", "bin", "--threads", "1"});
  const auto r = keel::test::run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(random_simd, every_level_gives_the_scalar_bits) {
  struct run {
    const char* generator;
    const char* dist;
    const char* offset;
    const char* count;
  };
  const run runs[] = {
      {"philox4_32_10", "raw", "3", "100005"},
      {"philox4_32_10", "uniform", "0", "4194309"},  // streamed
      {"philox4_32_10", "normal", "1", "100003"},
      {"philox4_32_10", "normal", "262100", "4194310"},
      {"xorwow", "uniform", "5", "100000"},
      {"xorwow", "normal", "4097", "100002"},
      {"mrg32k3a", "raw", "7", "100000"},
      {"mrg32k3a", "normal", "81921", "100002"},
  };
  for (const auto& r : runs) {
    const std::vector<std::string> args{r.dist,     "--generator", r.generator, "--seed", "77",
                                        "--offset", r.offset,      "--count",   r.count};
    const std::string scalar = values_at("scalar", args);
    ASSERT_EQ(scalar.size(), std::stoul(r.count) * 4) << r.generator << " " << r.dist;
    for (const char* level : {"avx2", "avx512"})
      EXPECT_TRUE(values_at(level, args) == scalar)
          << r.generator << " " << r.dist << " offset " << r.offset << " at " << level
          << " differs from the scalar path";
  }
}

}  // namespace
