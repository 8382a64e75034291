// `keel rand` from the outside: values as libcurand gives them, the binary format, the
// bench's CPU-time mode, and bad input answered with one "keel: ..." line and exit status 2.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"
#include "process.hpp"

namespace {

using keel::test::run_keel;

TEST(random_cli, philox_normal_starts_as_curand) {
  const auto r = run_keel({"rand", "normal", "--seed", "1234", "--count", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "-1.61649048\n1.22915542\n-1.56054044\n0.464621365\n");
}

TEST(random_cli, bin_format_is_the_values_back_to_back) {
  const auto r = run_keel({"rand", "raw", "--generator", "xorwow", "--seed", "42", "--offset", "3",
                           "--count", "1000", "--format", "bin"});
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
  const auto r =
      run_keel({"rand", "raw", "--generator", "mt19937", "--seed", "1234", "--count", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "822569775\n292421642\n643530888\n");
}

// The SIMD level (KEEL_RANDOM_SIMD caps it) never changes the bits: the jump, block, row and
// inverse-CDF kernels are compiled per instruction set.
TEST(random_cli, mt19937_output_does_not_depend_on_the_simd_level) {
  for (const auto& [dist, count] : {std::pair{"raw", "300001"}, std::pair{"normal", "20001"}}) {
    const std::vector<std::string> args = {"rand", dist,      "--generator", "mt19937",  "--seed",
                                           "7",    "--count", count,         "--format", "bin"};
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

// Both of libcurand's Poisson methods, odd counts, through the text output.
TEST(random_cli, poisson_equals_the_generator) {
  for (const char* lambda : {"3.7", "1999", "2000", "400000"}) {
    const auto r = run_keel({"rand", "poisson", "--generator", "xorwow", "--lambda", lambda,
                             "--seed", "5", "--offset", "7", "--count", "1001"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    keel::random::generator g(keel::random::rng_type::xorwow);
    g.set_seed(5);
    g.set_offset(7);
    std::vector<std::uint32_t> v(1001);
    ASSERT_EQ(g.generate_poisson(v.data(), v.size(), std::strtod(lambda, nullptr)),
              keel::random::status::success);
    std::string expected;
    for (auto x : v) expected += std::to_string(x) + "\n";
    EXPECT_EQ(r.out, expected) << lambda;
  }
}

// The shape of the report, not the speed: a tiny count on the one generator whose libcurand
// calls are cheap (libcurand's other host generators set up every thread on each call, seconds
// each, whatever the count). Which rows --cpu-time keeps does not depend on the generator.
TEST(random_cli, bench_by_cpu_time_has_single_thread_rows_only) {
  const auto r = run_keel({"rand", "bench", "--count", "4096", "--repeats", "1", "--cpu-time",
                           "--generator", "sobol32", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["clock"], "thread-cpu");
  EXPECT_EQ(doc["count"], 4096);
  std::vector<std::string> dists;
  for (const auto& row : doc["results"]) {
    EXPECT_EQ(row["generator"], "sobol32");
    EXPECT_EQ(row["threads"], 1);
    EXPECT_GT(row["keel_gsps"].get<double>(), 0.0);
    dists.push_back(row["dist"].get<std::string>());
  }
  EXPECT_EQ(dists,
            (std::vector<std::string>{"raw", "uniform", "normal", "normal-double", "poisson"}));
}

TEST(random_cli, bad_input_is_one_line_and_exit_2) {
  const std::vector<std::vector<std::string>> cases = {
      {"rand", "normal", "--generator", "nope"},
      {"rand", "normal", "--generator", "xorwow", "--count",
       "3"},  // odd count: LENGTH_NOT_MULTIPLE
      {"rand", "uniform", "--ordering", "dynamic"},
      {"rand", "raw", "--generator", "mt19937", "--offset",
       "5"},  // libcurand refuses offsets: TYPE_ERROR
      {"rand", "normal-double", "--generator", "mt19937", "--ordering", "best"},  // OUT_OF_RANGE
      {"rand", "uniform", "--generator", "mtgp32", "--offset", "5"},  // MTGP32 has no offset
      {"rand", "export-tables", "--out", "/nonexistent-dir/x.txt"},   // nothing named
      {"rand", "raw", "--format", "csv"},
      {"rand", "raw", "--count", "-5"},
      {"rand", "raw", "--out", "/nonexistent-dir/x.bin"},
      {"rand", "raw", "--generator", "sobol32", "--dimensions", "0"},
      {"rand", "raw", "--generator", "sobol32", "--dimensions", "20001"},
      {"rand", "raw", "--generator", "sobol32", "--dimensions", "3", "--count", "7"},
      {"rand", "raw", "--generator", "sobol32", "--seed", "5"},
      {"rand", "raw", "--dimensions", "2"},         // Philox has no dimensions: TYPE_ERROR
      {"rand", "export-tables", "--out", "x.bin"},  // no table named
      {"rand", "poisson", "--lambda", "0"},
      {"rand", "poisson", "--lambda", "-3"},
      {"rand", "poisson", "--lambda", "400001"},
      {"rand", "poisson", "--lambda", "inf"},
      {"rand", "poisson", "--lambda", "nan"},
      {"rand", "poisson", "--lambda", "ten"},
  };
  for (const auto& args : cases) {
    const auto r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_EQ(keel::test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("keel: ", 0), 0u) << r.err;
  }
}

TEST(random_cli, sobol_dimensions_lay_out_points_dimension_by_dimension) {
  const auto r =
      run_keel({"rand", "raw", "--generator", "sobol32", "--dimensions", "3", "--count", "12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // curandGenerate(12) after curandSetQuasiRandomGeneratorDimensions(3).
  EXPECT_EQ(r.out,
            "0\n2147483648\n3221225472\n1073741824\n0\n2147483648\n1073741824\n3221225472\n"
            "0\n2147483648\n1073741824\n3221225472\n");
}

// KEEL_SOBOL_SCRAMBLE_TABLES names the scrambled tables: a file keel wrote (here with made-up
// shifts, so no libcurand is needed) is used as given; a missing one is one line and exit 2.
TEST(random_cli, scrambled_sobol_reads_the_table_file_named_by_the_environment) {
  namespace kr = keel::random;
  kr::sobol32_scrambled t;
  t.directions.assign(kr::sobol32_joe_kuo6(),
                      kr::sobol32_joe_kuo6() + kr::k_sobol32_max_dimensions);
  for (std::uint32_t d = 0; d < kr::k_sobol32_max_dimensions; ++d)
    t.shifts.push_back(0x9e3779b9u * (d + 1));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("keel_cli_sobol_" + std::to_string(::getpid())))
          .string();
  kr::write_sobol32_scramble_tables(path, t);
  ::setenv("KEEL_SOBOL_SCRAMBLE_TABLES", path.c_str(), 1);
  const auto r = run_keel({"rand", "raw", "--generator", "scrambled_sobol32", "--dimensions", "2",
                           "--offset", "5", "--count", "2000", "--format", "bin"});
  ::setenv("KEEL_SOBOL_SCRAMBLE_TABLES", (path + ".missing").c_str(), 1);
  const auto missing = run_keel({"rand", "raw", "--generator", "scrambled_sobol32"});
  ::unsetenv("KEEL_SOBOL_SCRAMBLE_TABLES");
  std::filesystem::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.size(), 8000u);
  for (std::uint32_t i = 0; i < 2000; ++i) {
    std::uint32_t v;
    std::memcpy(&v, r.out.data() + 4 * i, 4);
    ASSERT_EQ(v, kr::sobol32_point(t.directions[i / 1000], 5 + i % 1000, t.shifts[i / 1000])) << i;
  }
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(keel::test::count_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find(".missing"), std::string::npos) << missing.err;
}

// `keel rand export-tables --sobol` writes libcurand's scrambled tables; with that file keel's
// scrambled Sobol' equals libcurand's.
TEST(random_cli, exported_scramble_tables_reproduce_libcurand) {
  namespace kr = keel::random;
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("keel_cli_export_" + std::to_string(::getpid())))
          .string();
  const auto e = run_keel({"rand", "export-tables", "--sobol", "--out", path});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  ::setenv("KEEL_SOBOL_SCRAMBLE_TABLES", path.c_str(), 1);
  const auto r = run_keel({"rand", "uniform", "--generator", "scrambled_sobol32", "--dimensions",
                           "7", "--count", "7000", "--format", "bin"});
  ::unsetenv("KEEL_SOBOL_SCRAMBLE_TABLES");
  std::filesystem::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::unique_ptr<kr::curand_generator> g;
  ASSERT_EQ(ref.create_host_generator(kr::rng_type::scrambled_sobol32, g), kr::status::success);
  ASSERT_EQ(g->set_dimensions(7), kr::status::success);
  std::vector<float> expected(7000);
  ASSERT_EQ(g->generate_uniform(expected.data(), expected.size()), kr::status::success);
  ASSERT_EQ(r.out.size(), 7000u * 4);
  EXPECT_EQ(std::memcmp(r.out.data(), expected.data(), r.out.size()), 0);
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
  if (!keel::random::mtgp32_default_tables().tables)
    GTEST_SKIP() << keel::random::mtgp32_default_tables().description;
  const auto r =
      run_keel({"rand", "normal", "--generator", "mtgp32", "--seed", "1234", "--count", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0.20783715\n-0.0913457796\n0.294019133\n2.68481922\n");
}

TEST(random_cli, mtgp32_runs_from_exported_tables) {
  if (!keel::random::mtgp32_default_tables().tables)
    GTEST_SKIP() << keel::random::mtgp32_default_tables().description;
  const std::string path = testing::TempDir() + "keel_cli_mtgp32.txt";
  const auto e = run_keel({"rand", "export-tables", "--mtgp32", "--out", path});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::vector<std::string> args = {"rand", "raw",     "--generator", "mtgp32",   "--seed",
                                         "9",    "--count", "100000",      "--format", "bin"};
  const auto direct = run_keel(args);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  scoped_env env("KEEL_MTGP32_PARAMS", path);
  const auto from_file = run_keel(args);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_TRUE(from_file.out == direct.out);
}

TEST(random_cli, mtgp32_without_tables_is_one_line) {
  scoped_env env("KEEL_MTGP32_PARAMS", "/nonexistent-dir/params.txt");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"rand", "uniform", "--generator", "mtgp32"},
        std::vector<std::string>{"rand", "export-tables", "--mtgp32", "--out",
                                 testing::TempDir() + "unused.txt"}}) {
    const auto r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(keel::test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("mtgp32 parameter sets"), std::string::npos) << r.err;
  }
}

// Double inverse-CDF normals from the exported coefficients equal those from the toolkit's
// header; without any coefficients they come from keel's own erfcinv, within a few ulps, and
// exporting them is a one-line error.
TEST(random_cli, double_normals_from_exported_erfcinv_coefficients) {
  if (!keel::random::erfcinv_default_tables().tables)
    GTEST_SKIP() << keel::random::erfcinv_default_tables().description;
  const std::string path = testing::TempDir() + "keel_cli_erfcinv.txt";
  const auto e = run_keel({"rand", "export-tables", "--erfcinv", "--out", path});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::vector<std::string> args = {"rand",    "normal-double", "--generator", "sobol32",
                                         "--count", "100000",        "--format",    "bin"};
  const auto direct = run_keel(args);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  {
    scoped_env env("KEEL_ERFCINV_COEFFICIENTS", path);
    const auto from_file = run_keel(args);
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_TRUE(from_file.out == direct.out);
  }
  scoped_env env("KEEL_ERFCINV_COEFFICIENTS", "/nonexistent-dir/erfcinv.txt");
  const auto own = run_keel(args);
  ASSERT_EQ(own.exit_code, 0) << own.err;
  ASSERT_EQ(own.out.size(), direct.out.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 100000; ++i) {
    std::int64_t a, b;
    std::memcpy(&a, own.out.data() + 8 * i, 8);
    std::memcpy(&b, direct.out.data() + 8 * i, 8);
    differ += a != b;
    ASSERT_LE(std::abs(a - b), 8) << "value " << i;  // same sign: the distance in ulps
  }
  RecordProperty("keel_erfcinv_values_differing", std::to_string(differ));
  const auto r =
      run_keel({"rand", "export-tables", "--erfcinv", "--out", testing::TempDir() + "unused.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(keel::test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("erfcinv coefficients"), std::string::npos) << r.err;
}

}  // namespace
