#define KEEL_SIMD_NS avx512
#define KEEL_ICDF_LANES 8
#include "normal_icdf_kernels.inc"
