#define KEEL_SIMD_NS avx2
#define KEEL_SIMD_BYTES 32
#include "sobol_kernels.inc"
