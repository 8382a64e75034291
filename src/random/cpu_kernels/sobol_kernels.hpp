// Internal: the Sobol' engine's conversion of raw words to raw and uniform outputs, vectorized
// (GCC vector extensions, native width) and compiled once per instruction set
// (sobol_avx2.cpp, sobol_avx512.cpp). Every version writes the bits of the scalar conversion
// in sobol_engine.cpp. The inverse-CDF normals are normal_icdf.hpp's, vectorized there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engines/engine.hpp"

namespace keel::random::detail {

// Values per conversion call (at most).
inline constexpr std::size_t k_sobol_batch = 1024;

// out[at .. at + n) of request r's kind (raw or uniform) from the raw words x[0 .. n),
// n <= k_sobol_batch. The scalar version (sobol_engine.cpp) is also the vector versions'
// remainder; simd::by_level picks one.
#define KEEL_SOBOL_SIMD_DECLS \
  void sobol_convert(const request& r, const std::uint32_t* x, std::size_t n, std::size_t at);
namespace simd::scalar {
KEEL_SOBOL_SIMD_DECLS
}
namespace simd::avx2 {
KEEL_SOBOL_SIMD_DECLS
}
namespace simd::avx512 {
KEEL_SOBOL_SIMD_DECLS
}
#undef KEEL_SOBOL_SIMD_DECLS

}  // namespace keel::random::detail
