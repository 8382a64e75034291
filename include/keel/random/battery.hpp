// The statistical battery of `keel rand test`: Philox4x32-10's uniforms and normals (seed
// 20240611) through the tests of keel/random/stat_tests.hpp, and the inter-stream trap (one
// LCG per thread seeded with the thread index, which fails, against Philox subsequences,
// which pass). A pure function of the sample count; uses the generator's worker threads.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <vector>

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
};

// `samples` values per distribution (>= 1). Throws keel::backend_error when the generator
// fails; a failed test is a result (battery_pass, trap_shown), not an exception.
battery_report run_battery(std::size_t samples);

}  // namespace keel::random
