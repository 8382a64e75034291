// Statistical checks of random streams: the battery behind `keel rand test`. Each function
// takes samples and returns the statistic and a two-sided/upper-tail p-value under the null
// hypothesis (uniform on (0,1] or standard normal). Pure functions, no shared state.
//
// inter_stream_* reproduce the classic parallel-RNG trap: per-thread streams seeded 0, 1, 2,
// ... of a linear congruential generator are Gaussian one by one but shifted copies of each
// other (x_n(s+d) - x_n(s) = a^n d mod 2^k), which the difference test exposes; Philox
// subsequences (one key, a counter per stream) pass it.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace keel::random {

struct test_result {
  std::string name;
  double statistic = 0;
  double p_value = 0;
};

// Pearson chi-square of `buckets` equal bins on uniforms in (0, 1].
test_result chi_square_uniform(std::span<const float> u, int buckets);
// Kolmogorov-Smirnov against the standard normal CDF (sorts a copy).
test_result kolmogorov_smirnov_normal(std::span<const float> z);
// Anderson-Darling A^2 against the standard normal CDF (sorts a copy).
test_result anderson_darling_normal(std::span<const float> z);
// Sample mean, variance, skewness and excess kurtosis as z-scores under N(0,1).
std::vector<test_result> moments_normal(std::span<const float> z);
// Lag-1 serial correlation r, statistic r * sqrt(n).
test_result serial_correlation(std::span<const float> x);

// stream(s, n, out): the first n 32-bit outputs of stream s.
using stream_fn = std::function<void(std::uint64_t stream, std::size_t n, std::uint32_t* out)>;
// For each step k < steps, the differences x_k(s+1) - x_k(s) mod 2^32 over s < streams-1 are
// bucketed by their top 8 bits; chi-square over all steps (p-value upper tail).
test_result inter_stream_differences(const stream_fn& stream, std::size_t streams,
                                     std::size_t steps);
// Mean Pearson correlation of neighbouring streams' uniforms over `steps` values, as a z-score.
test_result inter_stream_correlation(const stream_fn& stream, std::size_t streams,
                                     std::size_t steps);

// Upper-tail p-value of chi-square with `dof` degrees of freedom.
double chi_square_p(double chi2, double dof);

}  // namespace keel::random
