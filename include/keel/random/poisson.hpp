// keel::random Poisson — the distribution layer behind curandGeneratePoisson, as libcurand's
// host generator computes it (measured against libcurand 10.4; see docs/random.md).
//
// libcurand picks a method by generator and lambda (poisson_method_for has the thresholds):
//  * the square histogram (Marsaglia, Tsang & Wang's "Method II", an alias table) over every k
//    whose probability exp(k log(lambda) - lambda - log k!) does not underflow; one 32-bit
//    word w of the generator per output, with u = (w + 1) * 2^-32 (MT19937: its own uniform,
//    u = (w + 0.5) * 2^-32). poisson_table is that table, built with libcurand's own pairing
//    and rounding so that every word maps to the same count.
//  * inversion (MTGP32 and Sobol', moderate lambda): the smallest count whose cumulative
//    probability, summed over the same terms, is at least u = (w + 1) * 2^-32, one word per
//    output. poisson_inversion is that search.
//  * the normal approximation (large lambda, and NaN): (unsigned)(sqrt(lambda) * z + lambda
//    + 0.5) in double, with z one float normal per output from the generator's Poisson normal
//    stream (Philox, MTGP32, Sobol': their ordinary normals; XORWOW, MRG32k3a: cuRAND's
//    per-thread curand_normal stream, which keeps every other value for the thread's next
//    draw). poisson_from_normal is that conversion; MT19937 computes it in float instead
//    (poisson_from_normal_float).
// Any generator that supplies its 32-bit words and that normal stream in cuRAND's layout gets
// the same Poisson output as libcurand from this layer.
//
// Thread-safety: a poisson_table or poisson_inversion is immutable after construction and may
// be shared by any number of threads. Ownership: each owns its cells or thresholds (at most a
// few thousand, 4 or 8 bytes each).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "keel/random/status.hpp"

namespace keel::random {

// libcurand's limits: lambda in (0, 400000] (else CURAND_STATUS_OUT_OF_RANGE; NaN passes the
// check), the table for lambda < 2000 at most, inversion up to 8000.
inline constexpr double k_poisson_max_lambda = 400000.0;
inline constexpr double k_poisson_table_limit = 2000.0;
inline constexpr double k_poisson_inversion_limit = 8000.0;

enum class poisson_method { table, inversion, normal, normal_float };

// libcurand's choice, as measured (the comparisons are in double; NaN fails every one):
//   Philox4_32_10, XORWOW, MRG32k3a: table for lambda < 2000, else normal;
//   MT19937:                         table for lambda < 2000, else normal_float;
//   MTGP32:  table for lambda < 32, inversion for lambda <= 8000, else normal;
//   Sobol32, scrambled Sobol32: the same with 10 in place of 32.
constexpr poisson_method poisson_method_for(rng_type type, double lambda) noexcept {
  switch (type) {
    case rng_type::mt19937:
      return lambda < k_poisson_table_limit ? poisson_method::table : poisson_method::normal_float;
    case rng_type::mtgp32:
    case rng_type::quasi_default:
    case rng_type::sobol32:
    case rng_type::scrambled_sobol32:
      if (lambda < (type == rng_type::mtgp32 ? 32.0 : 10.0)) return poisson_method::table;
      return lambda <= k_poisson_inversion_limit ? poisson_method::inversion
                                                 : poisson_method::normal;
    default: return lambda < k_poisson_table_limit ? poisson_method::table : poisson_method::normal;
  }
}

// The count libcurand writes for every output when lambda is NaN: 0, but 2^32 - 1 on MTGP32
// and Sobol' (where libcurand 10.4 also writes past the end of a heap block it allocates:
// never call libcurand's Poisson with NaN on those generators).
constexpr std::uint32_t poisson_nan_count(rng_type type) noexcept {
  switch (type) {
    case rng_type::mtgp32:
    case rng_type::quasi_default:
    case rng_type::sobol32:
    case rng_type::scrambled_sobol32: return 0xffffffffu;
    default: return 0;
  }
}

class poisson_table {
 public:
  // How a word becomes the table's uniform: u = (w + 1) * 2^-32, or (w + 0.5) * 2^-32 (MT19937).
  enum class uniform { plus_one, plus_half };
  // Builds libcurand's table for lambda. Throws keel::invalid_argument unless
  // 0 < lambda < k_poisson_table_limit.
  explicit poisson_table(double lambda, uniform u = uniform::plus_one);

  double lambda() const noexcept { return lambda_; }
  uniform convention() const noexcept { return uniform_; }
  // The smallest count the table can return and the number of counts (cells) it covers.
  std::uint32_t first() const noexcept { return first_; }
  std::size_t size() const noexcept { return size_; }

  // The count libcurand returns for the 32-bit word w.
  std::uint32_t operator()(std::uint32_t w) const noexcept {
    // floor(size * u): floor(size (w + 1) / 2^32), or floor(size (2 w + 1) / 2^33).
    const std::uint64_t sw = std::uint64_t{size_} * w;
    const std::uint64_t j =
        uniform_ == uniform::plus_one ? (sw + size_) >> 32 : (2 * sw + size_) >> 33;
    const cell c = cells_[j];
    return w < c.threshold ? first_ + static_cast<std::uint32_t>(j) : c.alias;
  }

  // Replaces each of the n words in place by its count (SIMD where the CPU has it; the same
  // bits at every level).
  void map(std::uint32_t* words, std::size_t n) const noexcept;

  // Cell j: words below `threshold` give first() + j, the others `alias`. Cell size() holds
  // the word 2^32 - 1 alone when u = 1 (plus_one), for which libcurand returns first().
  struct cell {
    std::uint32_t threshold;
    std::uint32_t alias;
  };
  const std::vector<cell>& cells() const noexcept { return cells_; }

 private:
  double lambda_;
  uniform uniform_;
  std::uint32_t first_ = 0;
  std::uint32_t size_ = 0;
  std::vector<cell> cells_;
};

// libcurand's inversion: for the word w, the smallest count k >= first() whose cumulative
// probability P_k = p_first + ... + p_k (the table's terms, summed in double in this order) is
// at least u = (w + 1) * 2^-32, where the search stops at the last k at which the running sum
// still grows (what the word 2^32 - 1 gets when u = 1 exceeds the sum). In integers: count
// first() + #{j : thresholds()[j] <= w}, thresholds()[j] = floor(P_(first + j) * 2^32).
class poisson_inversion {
 public:
  // Throws keel::invalid_argument unless 0 < lambda <= k_poisson_inversion_limit.
  explicit poisson_inversion(double lambda);

  double lambda() const noexcept { return lambda_; }
  std::uint32_t first() const noexcept { return first_; }
  // Non-decreasing; only those below 2^32 (a sum above 1 is never reached by u).
  const std::vector<std::uint32_t>& thresholds() const noexcept { return thresholds_; }

  std::uint32_t operator()(std::uint32_t w) const noexcept;
  // Replaces each of the n words in place by its count.
  void map(std::uint32_t* words, std::size_t n) const noexcept;

 private:
  static constexpr int k_guide_bits = 12;
  double lambda_;
  std::uint32_t first_ = 0;
  std::vector<std::uint32_t> thresholds_;
  // guide_[b]: thresholds below b * 2^(32 - k_guide_bits); the search for a word of bucket b
  // is left with [guide_[b], guide_[b + 1]).
  std::vector<std::uint32_t> guide_;
};

// The normal approximation: (unsigned)(sqrt(lambda) * z + lambda + 0.5), each operation
// rounded in double; 0 when lambda is NaN (what libcurand's conversion gives). Precondition:
// the result is below 2^32, which holds for every lambda <= k_poisson_max_lambda.
inline std::uint32_t poisson_from_normal(float z, double lambda) noexcept {
  if (std::isnan(lambda)) return 0;
  // NOLINTNEXTLINE(bugprone-incorrect-roundings): libcurand truncates x + 0.5, not lround
  return static_cast<std::uint32_t>(std::sqrt(lambda) * static_cast<double>(z) + lambda + 0.5);
}

// poisson_from_normal over n normals (SIMD where the CPU has it, same bits); `out` may be
// `z` itself (the floats are replaced in place). Same precondition.
void poisson_from_normals(const float* z, std::uint32_t* out, std::size_t n,
                          double lambda) noexcept;

// MT19937's normal approximation: the same formula in float, with lambda rounded to float
// first: (unsigned)(sqrtf(l) * z + l + 0.5f), l = (float)lambda, evaluated left to right;
// 0 when lambda is NaN. Same precondition.
inline std::uint32_t poisson_from_normal_float(float z, double lambda) noexcept {
  if (std::isnan(lambda)) return 0;
  const float l = static_cast<float>(lambda);
  // NOLINTNEXTLINE(bugprone-incorrect-roundings): libcurand truncates x + 0.5f, not lround
  return static_cast<std::uint32_t>(std::sqrt(l) * z + l + 0.5f);
}

}  // namespace keel::random
