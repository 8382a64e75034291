#define KEEL_SIMD_NS avx2
#include "simd_kernels.inc"
