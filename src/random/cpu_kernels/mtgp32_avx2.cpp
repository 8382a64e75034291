#define KEEL_SIMD_NS avx2
#define KEEL_MTGP32_LANES 8
#include "mtgp32_kernels.inc"
