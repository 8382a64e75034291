#define KEEL_SIMD_NS avx2
#define KEEL_BMD_LANES 4
#include "box_muller_double_kernels.inc"
