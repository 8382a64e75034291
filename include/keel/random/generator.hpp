// keel::random::generator — cuRAND's host generator API (curandCreateGeneratorHost and the
// curandGenerate* family) reimplemented on the CPU, bit for bit.
//
// Semantics follow cuRAND: a generator has a type, a seed, an offset and an ordering; every
// generate call continues where the previous one stopped, so split calls equal one call of
// the summed length. Methods return cuRAND's status codes (keel::random::status) rather than
// throwing, exactly where libcurand returns them (e.g. length_not_multiple for an odd count of
// XORWOW normals, out_of_range for BEST ordering on MT19937); invalid pointers are the
// caller's responsibility, as in cuRAND. Two kinds of output depend on NVIDIA data read at
// run time: MTGP32 needs its parameter sets (keel/random/mtgp32_tables.hpp), and the
// inverse-CDF double normals and log-normals (MT19937, Sobol'; MTGP32's log-normal) are
// libcurand's bits only with its erfcinv coefficients (keel/random/erfcinv_tables.hpp),
// keel's own erfcinv otherwise.
//
// Thread-safety: one generator must not be used from two threads at once (as in cuRAND);
// distinct generators are independent. Large calls run on set_threads() workers internally;
// the output never depends on the number of workers or on the SIMD level chosen.
// Ownership: the generator owns its state; output buffers belong to the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "keel/random/status.hpp"

namespace keel::random {

namespace detail {
class engine;
struct poisson_cache;
}  // namespace detail

class generator {
 public:
  // Creates a host generator of `type` with cuRAND's defaults (seed 0, offset 0, default
  // ordering). Throws keel::invalid_argument for a type keel does not implement; use
  // create() for cuRAND's status-returning form.
  explicit generator(rng_type type);
  ~generator();
  generator(generator&&) noexcept;
  generator& operator=(generator&&) noexcept;

  // cuRAND's curandCreateGeneratorHost: type_error for an unknown or unimplemented type.
  static status create(rng_type type, std::unique_ptr<generator>& out);

  rng_type type() const noexcept { return type_; }

  status set_seed(std::uint64_t seed);
  status set_offset(std::uint64_t offset);
  status set_ordering(ordering order);
  // Quasi-random generators (sobol32, scrambled_sobol32): 1..20000 dimensions, else
  // OUT_OF_RANGE; TYPE_ERROR on the pseudo-random ones (which, in turn, alone take a seed).
  status set_dimensions(std::uint32_t dimensions);

  status generate(std::uint32_t* out, std::size_t n);
  status generate_uniform(float* out, std::size_t n);
  status generate_uniform_double(double* out, std::size_t n);
  status generate_normal(float* out, std::size_t n, float mean, float stddev);
  status generate_normal_double(double* out, std::size_t n, double mean, double stddev);
  status generate_log_normal(float* out, std::size_t n, float mean, float stddev);
  status generate_log_normal_double(double* out, std::size_t n, double mean, double stddev);
  // curandGeneratePoisson (methods in keel/random/poisson.hpp): out_of_range for lambda <= 0
  // or > 400000 unless n is 0; any n, odd included, for every pseudo-random generator
  // (Sobol': a multiple of the dimension count, else length_not_multiple).
  status generate_poisson(std::uint32_t* out, std::size_t n, double lambda);

  // keel extension: worker threads for large calls (0 = all hardware threads, 1 = inline).
  void set_threads(unsigned threads) noexcept { threads_ = threads; }
  unsigned threads() const noexcept { return threads_; }

 private:
  rng_type type_;
  unsigned threads_ = 0;
  std::unique_ptr<detail::engine> engine_;
  std::unique_ptr<detail::poisson_cache> poisson_;  // the last lambda's table and inversion
};

// The SIMD level the fast paths use on this CPU: "avx512", "avx2" or "scalar".
// KEEL_RANDOM_SIMD=scalar|avx2|avx512 in the environment caps it (for testing).
const char* simd_level() noexcept;

}  // namespace keel::random
