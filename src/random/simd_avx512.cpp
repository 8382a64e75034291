#define KEEL_SIMD_NS avx512
#include "simd_kernels.inc"
