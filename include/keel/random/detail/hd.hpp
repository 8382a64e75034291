// KEEL_HD marks keel::random's core functions as callable from host and CUDA device code.
// Outside nvcc it expands to nothing; the cores are plain constexpr C++20.
#pragma once

#if defined(__CUDACC__)
#define KEEL_HD __host__ __device__
#else
#define KEEL_HD
#endif
