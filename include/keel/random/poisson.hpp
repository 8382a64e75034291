// keel::random Poisson — the distribution layer behind curandGeneratePoisson, as libcurand's
// host generator computes it (measured against libcurand 10.4; see docs/random.md).
//
// libcurand picks one of two methods by lambda:
//  * lambda < 2000: a square histogram (Marsaglia, Tsang & Wang's "Method II", an alias table)
//    over every k whose probability exp(k log(lambda) - lambda - log k!) does not underflow;
//    one 32-bit word w of the generator per output, with u = (w + 1) * 2^-32.
//    poisson_table is that table, built with libcurand's own pairing and rounding so that
//    every word maps to the same count.
//  * lambda >= 2000 (and NaN): (unsigned)(sqrt(lambda) * z + lambda + 0.5) in double, with z
//    one float normal per output from the generator's Poisson normal stream (Philox: its
//    ordinary normals; XORWOW, MRG32k3a: cuRAND's per-thread curand_normal stream, which
//    keeps every other value for the thread's next draw). poisson_from_normal is that
//    conversion.
// Any generator that supplies its 32-bit words and that normal stream in cuRAND's layout gets
// the same Poisson output as libcurand from this layer.
//
// Thread-safety: a poisson_table is immutable after construction and may be shared by any
// number of threads. Ownership: it owns its cells (at most a few thousand, 8 bytes each).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace keel::random {

// libcurand's limits: lambda in (0, 400000] (else CURAND_STATUS_OUT_OF_RANGE; NaN passes
// the check and gives zeros), the table for lambda < 2000, the normal approximation above.
inline constexpr double k_poisson_max_lambda = 400000.0;
inline constexpr double k_poisson_table_limit = 2000.0;

// True when libcurand draws Poisson(lambda) from the square histogram.
constexpr bool poisson_uses_table(double lambda) noexcept { return lambda < k_poisson_table_limit; }

class poisson_table {
 public:
  // Builds libcurand's table for lambda. Throws keel::invalid_argument unless
  // 0 < lambda < k_poisson_table_limit.
  explicit poisson_table(double lambda);

  double lambda() const noexcept { return lambda_; }
  // The smallest count the table can return and the number of counts (cells) it covers.
  std::uint32_t first() const noexcept { return first_; }
  std::size_t size() const noexcept { return size_; }

  // The count libcurand returns for the 32-bit word w.
  std::uint32_t operator()(std::uint32_t w) const noexcept {
    const std::uint64_t j = (std::uint64_t{size_} * w + size_) >> 32;  // floor(size * (w + 1) / 2^32)
    const cell c = cells_[j];
    return w < c.threshold ? first_ + static_cast<std::uint32_t>(j) : c.alias;
  }

  // Replaces each of the n words in place by its count (SIMD where the CPU has it; the same
  // bits at every level).
  void map(std::uint32_t* words, std::size_t n) const noexcept;

  // Cell j: words below `threshold` give first() + j, the others `alias`. Cell size() holds
  // the word 2^32 - 1 alone (u = 1), for which libcurand returns first().
  struct cell {
    std::uint32_t threshold;
    std::uint32_t alias;
  };
  const std::vector<cell>& cells() const noexcept { return cells_; }

 private:
  double lambda_;
  std::uint32_t first_ = 0;
  std::uint32_t size_ = 0;
  std::vector<cell> cells_;
};

// The normal approximation: (unsigned)(sqrt(lambda) * z + lambda + 0.5), each operation
// rounded in double; 0 when lambda is NaN (what libcurand's conversion gives). Precondition:
// the result is below 2^32, which holds for every lambda <= k_poisson_max_lambda.
inline std::uint32_t poisson_from_normal(float z, double lambda) noexcept {
  if (std::isnan(lambda)) return 0;
  return static_cast<std::uint32_t>(std::sqrt(lambda) * static_cast<double>(z) + lambda + 0.5);
}

// poisson_from_normal over n normals (SIMD where the CPU has it, same bits); `out` may be
// `z` itself (the floats are replaced in place). Same precondition.
void poisson_from_normals(const float* z, std::uint32_t* out, std::size_t n, double lambda) noexcept;

}  // namespace keel::random
