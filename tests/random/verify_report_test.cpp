// keel::random's verify reports: what `keel rand verify` (the matrix, --write-golden, --icdf,
// --math) computes and prints, on small inputs. The libcurand comparisons are skipped when
// libcurand cannot be loaded.
#include "keel/random/verify_report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"

namespace kr = keel::random;

namespace {

bool have_curand() { return kr::curand_reference::get().available(); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("keel_verify_report_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST(random_verify_report, text_lists_notes_mismatches_and_the_summary) {
  kr::verify_report r;
  r.simd = "avx2";
  r.notes = {"mtgp32 skipped: no tables"};
  r.cases = 10;
  r.values = 6000;
  r.failed_cases = 1;
  kr::verify_failure f;
  f.name = "xorwow/default/raw/seed=0/offset=0/calls=6000";
  f.mismatches = 3;
  f.first = 17;
  f.keel_status = kr::status::success;
  f.curand_status = kr::status::length_not_multiple;
  r.failures.push_back(f);
  r.random_seed = 5;
  r.seconds = 1.26;
  EXPECT_EQ(kr::to_text(r),
            "mtgp32 skipped: no tables\n"
            "MISMATCH xorwow/default/raw/seed=0/offset=0/calls=6000: 3 values, first at 17\n"
            "10 cases, 6000 values, 1 failed cases (1.3 s, random seed 5, simd avx2)\n");
  const nlohmann::json j = kr::to_json(r);
  EXPECT_EQ(j.at("failures").at(0).at("curand_status"), 105);
  EXPECT_EQ(j.at("failures").at(0).at("case"), f.name);
  EXPECT_EQ(j.at("failed_cases"), 1);
  for (const char* key : {"libcurand", "simd", "mtgp32_tables", "erfcinv_tables", "cases", "values",
                          "random_seed", "seconds"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(random_verify_report, a_small_matrix_matches_libcurand) {
  kr::verify_request request;
  request.length = 64;
  request.generator = "philox4_32_10";
  if (!have_curand()) {
    EXPECT_THROW(kr::run_verify(request), keel::backend_error);
    GTEST_SKIP() << kr::curand_reference::get().description();
  }
  const kr::verify_report r = kr::run_verify(request);
  EXPECT_GT(r.cases, 0u);
  EXPECT_EQ(r.failed_cases, 0u);
  EXPECT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.random_seed, 0x5eed5eed12345678ull);
  EXPECT_EQ(r.libcurand, kr::curand_reference::get().version());
  EXPECT_FALSE(r.notes.empty());  // the erfcinv coefficients' source, at least
  const std::string text = kr::to_text(r);
  EXPECT_NE(text.find(std::to_string(r.cases) + " cases, "), std::string::npos) << text;
  request.generator = "nope";
  EXPECT_THROW(kr::run_verify(request), keel::invalid_argument);
}

TEST(random_verify_report, a_poisson_sweep_matches_libcurand) {
  if (!have_curand()) GTEST_SKIP() << kr::curand_reference::get().description();
  kr::verify_request request;
  request.poisson_lambdas = 1;
  request.length = 33;
  request.generator = "philox4_32_10";
  request.random_seed = 7;
  const kr::verify_report r = kr::run_verify(request);
  EXPECT_GT(r.cases, 0u);
  EXPECT_EQ(r.failed_cases, 0u);
  EXPECT_EQ(r.random_seed, 7u);
}

TEST(random_verify_report, golden_file_has_a_line_per_case) {
  kr::verify_request request;
  request.length = 16;
  const std::string path = temp_path("golden.txt");
  if (!have_curand()) {
    EXPECT_THROW(kr::write_golden_file(request, path), keel::backend_error);
    GTEST_SKIP() << kr::curand_reference::get().description();
  }
  // The whole matrix takes minutes through libcurand's MT19937: a few XORWOW cases here.
  std::vector<kr::verify_case> cases;
  for (const auto& c : kr::standard_cases(16, false, 1))
    if (c.type == kr::rng_type::xorwow && cases.size() < 5) cases.push_back(c);
  kr::write_golden_file(cases, path);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "# libcurand " + std::to_string(kr::curand_reference::get().version()) +
                      " host generator answers: name count status fnv1a64 first-values");
  for (const auto& c : cases) {
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, kr::golden_line(c, kr::run_curand(c)));
  }
  EXPECT_FALSE(std::getline(in, line));
  std::filesystem::remove(path);
  // The file is created before any case runs.
  EXPECT_THROW(kr::write_golden_file(request, "/nonexistent-dir/golden.txt"), keel::io_error);
}

TEST(random_verify_report, icdf_normals_match_libcurand_on_a_prefix) {
  if (!have_curand()) {
    EXPECT_THROW(kr::run_icdf_check(1024), keel::backend_error);
    GTEST_SKIP() << kr::curand_reference::get().description();
  }
  const kr::icdf_report r = kr::run_icdf_check(4096);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].dist, kr::distribution::normal);
  EXPECT_EQ(r.rows[1].dist, kr::distribution::normal_double);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.inputs, 4096u);
    EXPECT_EQ(row.differing, 0u);
  }
  EXPECT_TRUE(r.failure.empty());
  const std::string text = kr::to_text(r);
  EXPECT_EQ(text.rfind("sobol32 normal: 4096 inputs, 0 differ from libcurand (max 0 ULP)\n", 0), 0u)
      << text;
  EXPECT_EQ(kr::to_json(r).at("icdf").size(), 2u);
}

TEST(random_verify_report, icdf_text_and_json) {
  kr::icdf_report r;
  kr::icdf_row row;
  row.dist = kr::distribution::normal_double;
  row.inputs = 10;
  row.differing = 2;
  row.max_ulp = 1;
  r.rows.push_back(row);
  r.seconds = 0.04;
  r.simd = "scalar";
  EXPECT_EQ(kr::to_text(r),
            "sobol32 normal-double: 10 inputs, 2 differ from libcurand (max 1 ULP)\n"
            "0.0 s, simd scalar\n");
  const nlohmann::json j = kr::to_json(r);
  EXPECT_EQ(j.at("icdf").at(0).at("dist"), "normal-double");
  EXPECT_EQ(j.at("icdf").at(0).at("max_ulp"), 1);
  EXPECT_EQ(j.at("simd"), "scalar");
}

TEST(random_verify_report, vector_math_agrees_with_glibc_on_a_stride) {
  const kr::math_report r = kr::run_math_check(std::uint32_t{1} << 16);
  EXPECT_TRUE(r.failure.empty()) << r.failure;
  for (const auto& m : r.levels) {
    EXPECT_GT(m.logf_inputs, 0u);
    EXPECT_EQ(m.logf_mismatches, 0u);
  }
  const std::string text = kr::to_text(r);
  if (r.levels.empty())
    EXPECT_EQ(text, "no SIMD level on this CPU: the scalar path calls glibc itself\n");
  else
    EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(kr::to_json(r).at("levels").size(), r.levels.size());
}

TEST(random_verify_report, math_text_names_the_first_mismatch) {
  kr::math_report r;
  kr::math_check m;
  m.level = "avx2";
  m.logf_inputs = 100;
  m.logf_mismatches = 1;
  m.sincosf_inputs = 50;
  m.first_mismatch_bits = 0x3f800000;
  r.levels.push_back(m);
  r.seconds = 2.25;
  EXPECT_EQ(kr::to_text(r),
            "avx2: logf 100 inputs, 1 differ from glibc; sincosf 50 inputs, 0 differ (first at "
            "float bits 3f800000)\n(2.2 s)\n");
  const nlohmann::json j = kr::to_json(r);
  EXPECT_EQ(j.at("levels").at(0).at("logf_mismatches"), 1);
  EXPECT_EQ(j.at("seconds"), 2.25);
}
