#define KEEL_SIMD_NS avx512
#define KEEL_SIMD_BYTES 64
#include "sobol_kernels.inc"
