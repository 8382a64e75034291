// Internal: the MT19937 hot loops, written once
// (mt19937_kernels.inc, GCC vector extensions without intrinsics) and compiled three times: at
// the base instruction set (scalar level, mt19937_engine.cpp), with AVX2 (simd_avx2.cpp) and
// with AVX-512 (simd_avx512.cpp). All three do the same operations in the same order and give
// the same bits. Not a public header.
//
// A "block" is 624 consecutive words of one generator's sequence, oldest first (the state
// from which the next 624 are computed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::random::detail::simd {

// The jump kernel's tables: table 0 holds a block and the words after it (x[i] is word i),
// table t = 1..7 the sums x[i] + x[i + d] over the set bits d of the nibble 2t + 1. A jump
// polynomial is given as windows: for each non-zero nibble h of its coefficients 4m .. 4m + 3,
// h = o << z with o odd, the offset ((o - 1) / 2) * k_mt19937_jump_table + 4m + z.
inline constexpr std::size_t k_mt19937_jump_table = 624 + 19952;
inline constexpr std::size_t k_mt19937_jump_scratch = 8 * k_mt19937_jump_table;

#define KEEL_MT19937_KERNEL_DECLS                                                              \
  /* The next block of the sequence, in place. */                                              \
  void mt19937_regenerate(std::uint32_t* w);                                                   \
  /* w <- q(A) w for the polynomial q given as `count` windows; scratch holds                  \
     k_mt19937_jump_scratch words. */                                                          \
  void mt19937_jump(std::uint32_t* w, const std::uint32_t* windows, std::size_t count,         \
                    std::uint32_t* scratch);                                                   \
  /* Row r (0..77) of `count` generators whose blocks follow each other (624 words apart): the \
     eight tempered words of generator k go to out[8k .. 8k + 8). */                           \
  void mt19937_row(const std::uint32_t* blocks, std::size_t count, unsigned r, std::uint32_t* out);

namespace scalar {
KEEL_MT19937_KERNEL_DECLS
}
namespace avx2 {
KEEL_MT19937_KERNEL_DECLS
}
namespace avx512 {
KEEL_MT19937_KERNEL_DECLS
}
#undef KEEL_MT19937_KERNEL_DECLS

}  // namespace keel::random::detail::simd
