// cuRAND's enumerations, with cuRAND's numeric values, so that keel's generator API and its
// C ABI (keel/random/c_api.h) report exactly what libcurand reports.
#pragma once

#include <cstdint>
#include <string_view>

namespace keel::random {

enum class status : int {
  success = 0,
  version_mismatch = 100,
  not_initialized = 101,
  allocation_failed = 102,
  type_error = 103,
  out_of_range = 104,
  length_not_multiple = 105,
  double_precision_required = 106,
  launch_failure = 201,
  preexisting_failure = 202,
  initialization_failed = 203,
  arch_mismatch = 204,
  internal_error = 999,
};

enum class rng_type : int {
  pseudo_default = 100,
  xorwow = 101,
  mrg32k3a = 121,
  mtgp32 = 141,
  mt19937 = 142,
  philox4_32_10 = 161,
  quasi_default = 200,
  sobol32 = 201,
  scrambled_sobol32 = 202,
  sobol64 = 203,
  scrambled_sobol64 = 204,
};

enum class ordering : int {
  pseudo_best = 100,
  pseudo_default = 101,
  pseudo_seeded = 102,
  pseudo_legacy = 103,
  pseudo_dynamic = 104,
  quasi_default = 201,
};

// Quasi-random generators (Sobol'): no seed, a dimension count instead.
constexpr bool is_quasi(rng_type t) noexcept {
  return static_cast<int>(t) >= static_cast<int>(rng_type::quasi_default);
}

std::string_view to_string(status s) noexcept;
std::string_view to_string(rng_type t) noexcept;
std::string_view to_string(ordering o) noexcept;
// The generators keel implements, by to_string's names: philox4_32_10, xorwow, mrg32k3a, mtgp32,
// mt19937, sobol32, scrambled_sobol32. Throws keel::invalid_argument for any other name.
rng_type parse_rng_type(std::string_view name);
// to_string's names: default, best, legacy, seeded, dynamic, quasi_default. Throws
// keel::invalid_argument otherwise.
ordering parse_ordering(std::string_view name);

}  // namespace keel::random
