// The statistical battery of `keel rand test`: Philox4x32-10's uniforms and normals (seed
// 20240611) through the tests of keel/random/stat_tests.hpp, and the inter-stream trap (one
// LCG per thread seeded with the thread index, which fails, against Philox subsequences,
// which pass). A pure function of the sample count; uses the generator's worker threads.
// to_json() gives the document `keel rand test --json` prints, to_text() its text.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/random/stat_tests.hpp"

namespace keel::random {

struct battery_report {
  std::size_t samples = 0;
  double alpha = 1e-4;
  std::vector<test_result> battery;         // chi-square, serial correlation, KS, AD, moments
  std::size_t streams = 10000, steps = 64;  // of the inter-stream tests
  test_result lcg_differences, lcg_correlation;
  test_result philox_differences, philox_correlation;
  bool battery_pass = false;  // every battery p-value above alpha
  bool trap_shown = false;    // the LCG's differences fail, Philox's pass
  std::string failure;        // "statistical battery failed" unless both; empty otherwise
};

// `samples` values per distribution (>= 1). Throws keel::backend_error when the generator
// fails; a failed test is a result (battery_pass, trap_shown), not an exception.
battery_report run_battery(std::size_t samples);

// samples, generator, alpha, battery (test, statistic, p), inter_stream (lcg_per_thread_seed,
// philox_subsequences: differences then correlation), streams, steps, battery_pass,
// lcg_fails_philox_passes.
nlohmann::json to_json(const battery_report& report);
// One line per test, then "battery: pass|FAIL" and the inter-stream outcome.
std::string to_text(const battery_report& report);

}  // namespace keel::random
