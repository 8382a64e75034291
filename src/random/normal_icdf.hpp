// Internal: cuRAND's inverse-CDF normal, the conversion its host generator applies to MT19937
// output: for a 32-bit word x, s = sqrt(2) (negated and x mirrored to ~x when x > 2^31),
// p = x * 2^-32 + 2^-33 in float, z = -s * erfcinvf(2p), where erfcinvf is the double erfcinv
// rounded to float. keel computes erfcinv(y) in double from Chebyshev fits that it derives at
// first use (from glibc's long double erf/erfc, by Newton's method), and falls back to a long
// double Newton solution in the rare cases where the double value is too close to a float
// rounding boundary to decide: the result is the correctly rounded float erfcinv(y).
// Thread-safe (the fits are an immutable function-local static). Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::random::detail {

// erfcinv(y) rounded to float, for y a float in (0, 1].
float erfcinv_float(float y);

// The standard normal value cuRAND's inverse-CDF path gives for the word x (before * sd + mean).
float normal_icdf_float(std::uint32_t x);
// The same for n words (faster: in batches, through the vector kernels).
void normal_icdf_float(const std::uint32_t* x, float* z, std::size_t n);

// The worst relative error of the double approximation, as measured over `samples` words
// spread over the whole input range against the long double solution (tests).
double erfcinv_fit_error(std::uint32_t samples);

}  // namespace keel::random::detail
