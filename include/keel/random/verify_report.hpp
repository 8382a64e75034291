// verify_report — the checks of `keel rand verify` as functions that return a report: the
// bit-exactness matrix against libcurand's host generator (run_verify), libcurand's answers
// as a golden file (write_golden_file), the Sobol' inverse-CDF normals over every 32-bit
// input (run_icdf_check) and the SIMD logf/sincosf against glibc (run_math_check).
//
// A check whose values differ is a report with `failure` set (the one line the CLI ends
// with, as keel::backend_error), not an exception; to_json() gives the document `--json`
// prints and to_text() the lines the CLI prints otherwise. The libcurand checks throw
// keel::backend_error (curand_reference's description) when libcurand cannot be loaded.
// Reentrant apart from run_math_check, which switches the process's SIMD level while it runs
// (check_vector_math); they use keel's worker threads and curand_reference::get().
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/random/verify.hpp"

namespace keel::random {

// The matrix `keel rand verify` runs (standard_cases, or poisson_sweep_cases).
struct verify_request {
  bool full = false;       // every combination (standard_cases' `full`)
  std::size_t length = 0;  // values per case; 0: 6000, with `full` 524288
  // The matrix's "random" seed; none: 0x5eed5eed12345678, with `full` a fresh one.
  std::optional<std::uint64_t> random_seed;
  std::string generator;            // only this generator's cases (parse_rng_type); empty: all
  std::size_t poisson_lambdas = 0;  // > 0: poisson_sweep_cases with this many lambdas instead
};

struct verify_failure {
  std::string name;  // verify_case::name()
  std::size_t mismatches = 0, first = 0;
  status keel_status = status::success, curand_status = status::success;
};

struct verify_report {
  int libcurand = 0;                                // libcurand's version (run_verify requires it)
  std::string simd, mtgp32_tables, erfcinv_tables;  // simd_level(), the tables' descriptions
  std::vector<std::string> notes;  // which table-dependent cases are skipped, and why
  std::size_t cases = 0, values = 0, failed_cases = 0;
  std::vector<verify_failure> failures;  // in case order
  std::uint64_t random_seed = 0;
  double seconds = 0;
  std::string failure;  // "F of N cases differ from libcurand"; empty when all match
};

// Runs every case of the request through keel (one thread) and libcurand and compares the
// bytes. Throws keel::backend_error without libcurand and keel::invalid_argument for an
// unknown generator.
verify_report run_verify(const verify_request& request);

// libcurand, simd, mtgp32_tables, erfcinv_tables, cases, values, failed_cases, failures
// (case, mismatches, first, keel_status, curand_status: cuRAND's numbers), random_seed,
// seconds.
nlohmann::json to_json(const verify_report& report);
// The notes, "MISMATCH CASE: N values, first at I" per failure, and the summary line.
std::string to_text(const verify_report& report);

// libcurand's answers for the request's standard matrix (golden_line per case, after a
// comment line naming libcurand's version), written to `path` (keel::output_file); ignores
// `generator` and `poisson_lambdas`. Throws keel::backend_error without libcurand and
// keel::io_error when the file cannot be written.
void write_golden_file(const verify_request& request, const std::string& path);
// The same for the given cases.
void write_golden_file(const std::vector<verify_case>& cases, const std::string& path);

// keel's Sobol32 float and double normals against libcurand's, value by value, for the first
// `inputs` indices of dimension 1 (2^32: every 32-bit word once).
struct icdf_row {
  distribution dist = distribution::normal;
  std::uint64_t inputs = 0, differing = 0, max_ulp = 0;
};

struct icdf_report {
  std::vector<icdf_row> rows;  // normal, then normal_double
  double seconds = 0;
  std::string simd;
  std::string failure;  // "N Sobol' normals differ from libcurand"; empty when all match
};

// Throws keel::backend_error without libcurand (or when a generator refuses a call).
icdf_report run_icdf_check(std::uint64_t inputs = std::uint64_t{1} << 32);
// icdf (dist, inputs, differing, max_ulp), seconds, simd.
nlohmann::json to_json(const icdf_report& report);
std::string to_text(const icdf_report& report);

// check_vector_math(stride) at every SIMD level this CPU has; no libcurand needed.
struct math_report {
  std::vector<math_check> levels;
  double seconds = 0;
  std::string failure;  // "N vector logf/sincosf results differ from glibc"; empty when none
};

math_report run_math_check(std::uint32_t stride = 1);
// levels (simd, logf_inputs, logf_mismatches, sincosf_inputs, sincosf_mismatches), seconds.
nlohmann::json to_json(const math_report& report);
std::string to_text(const math_report& report);

}  // namespace keel::random
