// keel::random device-side building blocks for users' own CUDA kernels (and host code):
// Philox4x32-10 turned into four uniform or four normal floats from one (counter, key),
// exactly as cuRAND's curand_uniform4 / curand_normal4 turn one Philox block into floats.
//
//   __global__ void k(float* out, keel::random::philox_key key) {
//     const unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
//     const auto z = keel::random::philox_normal4(keel::random::philox_ctr_of(0, i), key);
//     ...
//   }
//
// Stateless and pure: no shared state, callable from any thread. On the device the math is
// CUDA's logf / sqrtf / __sincosf, which is what cuRAND's device generator uses (so
// outputs equal curandGenerateNormal's on the GPU); on the host it is the C library's
// logf / sqrtf / sincosf (with glibc 2.36 and -ffp-contract=off: libcurand's host bits).
#pragma once

#include <cmath>
#include <cstdint>

#include "keel/random/detail/hd.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/philox.hpp"

namespace keel::random {

struct float4_values {
  float v[4];
};

// The math the Box-Muller transform uses where it runs (see above).
struct native_math {
  KEEL_HD static float logf(float x) { return ::logf(x); }
  KEEL_HD static float sqrtf(float x) { return ::sqrtf(x); }
  KEEL_HD static void sincosf(float x, float* s, float* c) {
#if defined(__CUDA_ARCH__)
    ::__sincosf(x, s, c);
#else
    *s = ::sinf(x);
    *c = ::cosf(x);
#endif
  }
  KEEL_HD static double log(double x) { return ::log(x); }
  KEEL_HD static double sqrt(double x) { return ::sqrt(x); }
  KEEL_HD static double sin(double x) { return ::sin(x); }
  KEEL_HD static double cos(double x) { return ::cos(x); }
};

// Four uniform floats in (0, 1] from one Philox block.
KEEL_HD inline float4_values philox_uniform4(philox_ctr ctr, philox_key key) {
  const philox_ctr w = philox4x32_10(ctr, key);
  return {
      {uniform_float(w.v[0]), uniform_float(w.v[1]), uniform_float(w.v[2]), uniform_float(w.v[3])}};
}

// Four standard normal floats from one Philox block: Box-Muller on words (0, 1) and (2, 3),
// sine first, as curand_normal4.
template <class M = native_math>
KEEL_HD inline float4_values philox_normal4(philox_ctr ctr, philox_key key) {
  const philox_ctr w = philox4x32_10(ctr, key);
  const float_pair a = box_muller<M>(w.v[0], w.v[1]);
  const float_pair b = box_muller<M>(w.v[2], w.v[3]);
  return {{a.x, a.y, b.x, b.y}};
}

}  // namespace keel::random
