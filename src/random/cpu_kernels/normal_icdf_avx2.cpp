#define KEEL_SIMD_NS avx2
#define KEEL_ICDF_LANES 4
#include "normal_icdf_kernels.inc"
