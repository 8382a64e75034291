#define KEEL_SIMD_NS avx512
#include "simd_kernels.inc"
#define KEEL_MT19937_NS avx512
#include "mt19937_kernels.inc"
