// Internal: the math functions libcurand's host generator calls, i.e. glibc's own logf,
// sincosf, sqrtf, log, sin, cos, sqrt, expf, exp. Calling them is the exact scalar path; the
// SIMD paths (exact_math_*.cpp) reproduce glibc 2.36's logf/sincosf bit for bit.
#pragma once

#include <cmath>

namespace keel::random::detail {

struct glibc_math {
  static float logf(float x) { return ::logf(x); }
  static float sqrtf(float x) { return ::sqrtf(x); }
  static void sincosf(float x, float* s, float* c) { ::sincosf(x, s, c); }
  static double log(double x) { return ::log(x); }
  static double sqrt(double x) { return ::sqrt(x); }
  static double sin(double x) { return ::sin(x); }
  static double cos(double x) { return ::cos(x); }
};

}  // namespace keel::random::detail
