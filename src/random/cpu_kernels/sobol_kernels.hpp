// Internal: the Sobol' engine's conversion of raw words to raw and uniform outputs, vectorized
// (GCC vector extensions, native width) and compiled once per instruction set
// (sobol_avx2.cpp, sobol_avx512.cpp). Every version writes the bits of the scalar conversion
// in sobol_engine.cpp. The inverse-CDF normals are normal_icdf.hpp's, vectorized there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine.hpp"

namespace keel::random::detail::sobol_simd {

// Values per conversion call (at most).
inline constexpr std::size_t k_batch = 1024;

// out[at .. at + n) of request r's kind (raw or uniform) from the raw words x[0 .. n),
// n <= k_batch.
#define KEEL_SOBOL_SIMD_DECLS \
  void convert(const request& r, const std::uint32_t* x, std::size_t n, std::size_t at);
namespace avx2 {
KEEL_SOBOL_SIMD_DECLS
}
namespace avx512 {
KEEL_SOBOL_SIMD_DECLS
}
#undef KEEL_SOBOL_SIMD_DECLS

// The scalar conversion to raw and uniform outputs (sobol_engine.cpp), also the vector
// versions' remainder.
void convert_scalar(const request& r, const std::uint32_t* x, std::size_t n, std::size_t at);

}  // namespace keel::random::detail::sobol_simd
