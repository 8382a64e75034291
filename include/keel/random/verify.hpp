// keel::random verification against libcurand: a named case (generator, ordering,
// distribution, seed, offset, split of calls) is run through keel and through libcurand's
// host generator and the bytes compared; golden files record libcurand's answers (FNV-1a
// hash of all output bytes plus the first values) so the comparison also runs where
// libcurand is absent. Used by the tests, `keel rand verify` and `keel rand bench`.
// Free functions, no shared state apart from curand_reference::get().
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/fnv1a.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/status.hpp"

namespace keel::random {

enum class distribution {
  raw,
  uniform,
  uniform_double,
  normal,
  normal_double,
  log_normal,
  log_normal_double,
  poisson
};

std::string_view to_string(distribution d) noexcept;
// Parses the CLI names: raw, uniform, uniform-double, normal, normal-double, log-normal,
// log-normal-double, poisson. Throws keel::invalid_argument otherwise.
distribution parse_distribution(std::string_view name);
// Bytes per value of a distribution's output (4 or 8).
std::size_t value_size(distribution d) noexcept;

struct dist_params {
  double mean = 0.0;
  double stddev = 1.0;
  double lambda = 1.0;
};

// One generate call on either implementation (G is generator or curand_generator).
template <class G>
status generate(G& g, distribution d, void* out, std::size_t n, const dist_params& p) {
  switch (d) {
    case distribution::raw: return g.generate(static_cast<std::uint32_t*>(out), n);
    case distribution::uniform: return g.generate_uniform(static_cast<float*>(out), n);
    case distribution::uniform_double:
      return g.generate_uniform_double(static_cast<double*>(out), n);
    case distribution::normal:
      return g.generate_normal(static_cast<float*>(out), n, static_cast<float>(p.mean),
                               static_cast<float>(p.stddev));
    case distribution::normal_double:
      return g.generate_normal_double(static_cast<double*>(out), n, p.mean, p.stddev);
    case distribution::log_normal:
      return g.generate_log_normal(static_cast<float*>(out), n, static_cast<float>(p.mean),
                                   static_cast<float>(p.stddev));
    case distribution::log_normal_double:
      return g.generate_log_normal_double(static_cast<double*>(out), n, p.mean, p.stddev);
    case distribution::poisson:
      return g.generate_poisson(static_cast<std::uint32_t*>(out), n, p.lambda);
  }
  return status::internal_error;
}

// A setter called between the first and the second generate call (output already produced).
struct midstream_change {
  enum class setter { none, seed, offset, ordering } what = setter::none;
  std::uint64_t value = 0;  // the seed, the offset or the ordering's cuRAND value
};

struct verify_case {
  rng_type type = rng_type::philox4_32_10;
  ordering order = ordering::pseudo_default;
  distribution dist = distribution::raw;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::vector<std::size_t> calls;  // lengths of consecutive generate calls
  dist_params params;
  std::uint32_t dimensions = 1;  // quasi-random generators (the seed is then unused)
  midstream_change then;

  std::size_t count() const;
  // A stable identifier, e.g. "philox4_32_10/default/normal/seed=42/offset=3/calls=1000+24",
  // with "/then-seed=7" (or then-offset, then-ordering) after the calls for a change;
  // quasi-random generators show "dimensions=D" instead of the seed.
  std::string name() const;
};

struct run_output {
  status first_error = status::success;  // the first non-success status of the calls
  std::vector<unsigned char> bytes;      // all outputs back to back
};

run_output run_keel(const verify_case& c, unsigned threads = 1);
// Requires curand_reference::get().available().
run_output run_curand(const verify_case& c);

// Output fingerprints (golden data) are keel::fnv1a64.
using keel::fnv1a64;

// Where two outputs first differ and how many values differ; nullopt when identical.
struct mismatch {
  std::size_t first_index;
  std::size_t count;
};
std::optional<mismatch> compare(const run_output& a, const run_output& b, std::size_t value_bytes);

// The cases of the bit-exactness matrix: every implemented generator x distribution x
// ordering, seeds {0, 42, 1234, 2^64-1, random_seed} (quasi-random generators: dimensions
// {1, 3, 64, 1000, 20000} instead), offsets {0, 1, 3, 1000003} (MT19937: 0 only, libcurand
// refuses any other), single and split calls, `length` values each (quasi: rounded to whole
// points, at least two per dimension; Poisson: lambda {1e-6, 0.5, 3.7, 10, 32, 63.9, 1999,
// 2000, 8000, 8000.5, 1e5, 4e5} for each generator x ordering, in odd lengths, quasi-random
// ones in whole points); and split calls with a
// set_seed, set_offset or set_ordering after the first call. `full` takes every combination;
// otherwise a slice that still covers each generator x distribution x ordering (x lambda, and
// one change for each). MTGP32's cases are left out when its parameter sets are not
// available (keel/random/mtgp32_tables.hpp), and those uses_double_icdf() names when
// libcurand's erfcinv coefficients are not (keel/random/erfcinv_tables.hpp).
std::vector<verify_case> standard_cases(std::size_t length, bool full, std::uint64_t random_seed);
// Whether libcurand computes this generator's distribution with its double erfcinv (MT19937's
// and Sobol's double normals and log-normals, MTGP32's double log-normal), which keel
// reproduces only with the coefficients.
bool uses_double_icdf(rng_type type, distribution d) noexcept;

// A Poisson sweep: for each generator and a few orderings, `lambdas` values of lambda drawn
// log-uniformly from [1e-8, 4e5] (every method), each with a drawn seed (none on Sobol') and
// offset (none on MT19937 and MTGP32, which refuse one) and one call of `length` values (odd
// when `length` is), all from `random_seed`.
std::vector<verify_case> poisson_sweep_cases(std::size_t lambdas, std::size_t length,
                                             std::uint64_t random_seed);

// Golden files: one line per case, "name count status hash first-values-hex" (no values for
// scrambled_sobol32, whose tables keel does not ship).
std::string golden_line(const verify_case& c, const run_output& out);

// The vector logf and sincosf of the SIMD Box-Muller paths against glibc's, at every SIMD
// level this CPU has (avx2, avx512): logf over every float in [2^-33, 1] and sincosf over
// every float in [2^-31, 6.3], all the inputs the generators can give them (every `stride`-th
// input for a quicker partial check). Independent of libcurand. Not thread-safe: it switches
// the process's SIMD level while it runs (and restores it).
struct math_check {
  std::string level;
  std::uint64_t logf_inputs = 0, logf_mismatches = 0;
  std::uint64_t sincosf_inputs = 0, sincosf_mismatches = 0;
  std::uint32_t first_mismatch_bits = 0;  // the first input (float bits) that differed, if any
};
std::vector<math_check> check_vector_math(std::uint32_t stride = 1);

}  // namespace keel::random
