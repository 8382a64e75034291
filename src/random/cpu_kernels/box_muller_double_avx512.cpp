#define KEEL_SIMD_NS avx512
#define KEEL_BMD_LANES 8
#include "box_muller_double_kernels.inc"
