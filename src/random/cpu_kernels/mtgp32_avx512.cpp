#define KEEL_SIMD_NS avx512
#define KEEL_MTGP32_LANES 16
#include "mtgp32_kernels.inc"
