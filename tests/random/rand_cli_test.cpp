// `keel rand` from the outside: values as libcurand gives them, the binary format, and bad
// input answered with one "keel: ..." line and exit status 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "keel/random/generator.hpp"
#include "keel/random/mtgp32_tables.hpp"
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

TEST(random_cli, bad_input_is_one_line_and_exit_2) {
  const std::vector<std::vector<std::string>> cases = {
      {"rand", "normal", "--generator", "nope"},
      {"rand", "normal", "--generator", "xorwow", "--count", "3"},  // odd count: LENGTH_NOT_MULTIPLE
      {"rand", "uniform", "--ordering", "dynamic"},
      {"rand", "uniform", "--generator", "mtgp32", "--offset", "5"},  // MTGP32 has no offset
      {"rand", "export-tables", "--out", "/nonexistent-dir/x.txt"},   // nothing named
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

// Sets an environment variable for the child processes of one scope.
class scoped_env {
 public:
  scoped_env(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~scoped_env() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(random_cli, mtgp32_normal_starts_as_curand) {
  if (!keel::random::mtgp32_default_tables().tables) GTEST_SKIP() << keel::random::mtgp32_default_tables().description;
  const auto r = run_keel({"rand", "normal", "--generator", "mtgp32", "--seed", "1234", "--count", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0.20783715\n-0.0913457796\n0.294019133\n2.68481922\n");
}

TEST(random_cli, mtgp32_runs_from_exported_tables) {
  if (!keel::random::mtgp32_default_tables().tables) GTEST_SKIP() << keel::random::mtgp32_default_tables().description;
  const std::string path = testing::TempDir() + "keel_cli_mtgp32.txt";
  const auto e = run_keel({"rand", "export-tables", "--mtgp32", "--out", path});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::vector<std::string> args = {"rand", "raw", "--generator", "mtgp32", "--seed", "9", "--count", "100000",
                                         "--format", "bin"};
  const auto direct = run_keel(args);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  scoped_env env("KEEL_MTGP32_PARAMS", path);
  const auto from_file = run_keel(args);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_TRUE(from_file.out == direct.out);
}

TEST(random_cli, mtgp32_without_tables_is_one_line) {
  scoped_env env("KEEL_MTGP32_PARAMS", "/nonexistent-dir/params.txt");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"rand", "uniform", "--generator", "mtgp32"},
                                               std::vector<std::string>{"rand", "export-tables", "--mtgp32", "--out",
                                                                        testing::TempDir() + "unused.txt"}}) {
    const auto r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(keel::test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("mtgp32 parameter sets"), std::string::npos) << r.err;
  }
}

}  // namespace
