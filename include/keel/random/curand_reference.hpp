// keel::random::curand_reference — libcurand's host generator (curandCreateGeneratorHost),
// loaded at run time with dlopen, as the judge for bit-exactness and the peer in benchmarks.
//
// Nothing of CUDA is needed to build keel: the library is looked up at run time in
// $KEEL_CURAND_LIBRARY, then as libcurand.so.10 / libcurand.so on the loader's path, then in
// the CUDA toolkit's library directory found at configure time (if any). available() says
// whether that worked. Thread-safety: load() is safe to call from several threads; a
// curand_generator must be used by one thread at a time. Ownership: curand_generator owns its
// libcurand generator and destroys it.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "keel/random/status.hpp"

namespace keel::random {

class curand_generator {
 public:
  ~curand_generator();
  curand_generator(const curand_generator&) = delete;
  curand_generator& operator=(const curand_generator&) = delete;

  status set_seed(std::uint64_t seed);
  status set_offset(std::uint64_t offset);
  status set_ordering(ordering order);
  status set_dimensions(std::uint32_t dimensions);
  status generate(std::uint32_t* out, std::size_t n);
  status generate_uniform(float* out, std::size_t n);
  status generate_uniform_double(double* out, std::size_t n);
  status generate_normal(float* out, std::size_t n, float mean, float stddev);
  status generate_normal_double(double* out, std::size_t n, double mean, double stddev);
  status generate_log_normal(float* out, std::size_t n, float mean, float stddev);
  status generate_log_normal_double(double* out, std::size_t n, double mean, double stddev);
  status generate_poisson(std::uint32_t* out, std::size_t n, double lambda);

 private:
  friend class curand_reference;
  explicit curand_generator(void* handle) : handle_(handle) {}
  void* handle_;
};

class curand_reference {
 public:
  // The process-wide instance; loads libcurand on first use.
  static const curand_reference& get();

  bool available() const noexcept { return api_ != nullptr; }
  // Where libcurand was found, or why it was not.
  const std::string& description() const noexcept { return description_; }
  // libcurand's version (e.g. 10400), 0 when unavailable.
  int version() const noexcept { return version_; }

  // curandCreateGeneratorHost. Throws keel::backend_error when libcurand is unavailable.
  status create_host_generator(rng_type type, std::unique_ptr<curand_generator>& out) const;

  // curandGetDirectionVectors32 (20000 dimensions x 32 words, the Joe-Kuo set or its scrambled
  // variant) and curandGetScrambleConstants32 (20000 words): libcurand's own tables, valid
  // while the process runs. Throw keel::backend_error when libcurand is unavailable.
  status sobol32_direction_vectors(bool scrambled, const std::uint32_t*& vectors) const;
  status sobol32_scramble_constants(const std::uint32_t*& constants) const;

  struct api;

 private:
  curand_reference();
  const api* api_ = nullptr;
  std::string description_;
  int version_ = 0;
};

}  // namespace keel::random
