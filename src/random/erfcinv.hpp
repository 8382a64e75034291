// Internal: the inverse complementary error function that libcurand's host generator uses for
// its quasi-random normals, reproduced to the bit (measured over every input the generators
// can produce; see tests/random/sobol_test.cpp and `keel rand verify`).
//
// As measured, libcurand's host erfcinvf(a) is (float)erfcinv((double)a), and erfcinv(a) is
// the classic CUDA math library algorithm: the rational Chebyshev approximations of
// J. M. Blair, C. A. Edwards and J. H. Johnson, "Rational Chebyshev approximations for the
// inverse of the error function", Math. Comp. 30 (1976) 827-830 (tables in the issue's
// microfiche supplement), evaluated in double precision by Horner's rule with separately
// rounded operations, calling glibc's log, log1p and sqrt:
//   erfcinv(a) = erfinv(1 - a)                         for a >= 0.0625,
//              = P59(t) / (t Q59(t)), t = 1/sqrt(-log a)  for 1e-100 <= a < 0.0625;
//   erfinv(x)  = x P18(t) / Q18(t),  t = x^2 - 0.5625       for |x| < 0.75,
//              = x P39(t) / Q39(t),  t = x^2 - 0.87890625   for 0.75 <= |x| < 0.9375,
//              = ±P59(t) / (t Q59(t)), t = 1/sqrt(-log1p(-|x|)) for 0.9375 <= |x| < 1,
// where Pn/Qn are the numerator and (monic) denominator of Blair et al.'s Table n. Every input
// keel passes is at least 2^-32, so the paper's tables for a < 1e-100 are not needed.
// Compile with -ffp-contract=off (keel_random is): a fused multiply-add changes the bits.
#pragma once

#include <cmath>
#include <cstddef>

namespace keel::random::detail {

namespace blair {

// Coefficients from the constant term up; the denominators' leading coefficient is 1.
inline constexpr double p18[] = {-3.0786872642313695280e+2, 1.9007153590528134753e+3,
                                 -4.3799652308386926161e+3, 4.6631433533434331287e+3,
                                 -2.2977467176607144887e+3, 4.5560204272689128170e+2,
                                 -2.3886240104308755900e+1};
inline constexpr double q18[] = {-2.8386514725366621129e+2, 1.8997769186453057810e+3,
                                 -4.8481635430048872102e+3, 5.9039348134843665626e+3,
                                 -3.5088976383877264098e+3, 9.2741319160935318800e+2,
                                 -8.3288327901936570000e+1};
inline constexpr double p39[] = {
    9.4897362808681080020e-3,  -2.4758242362823355486e-1, 2.5349389220714893917e+0,
    -1.2954198980646771502e+1, 3.4810057749357500873e+1,  -4.7644367129787181803e+1,
    2.9631331505876308123e+1,  -6.4200071507209448655e+0, 2.1489185007307062000e-1};
inline constexpr double q39[] = {6.7544512778850945940e-3, -1.8611650627372178511e-1,
                                 2.0369295047216351160e+0, -1.1315360624238054876e+1,
                                 3.3880176779595142685e+1, -5.3715373448862143349e+1,
                                 4.1409991778428888716e+1, -1.2831383833953226499e+1};
inline constexpr double p59[] = {
    1.1738352509991666680e-6, 1.3858518113496718808e-4, 4.3836709877126095665e-3,
    5.3644861147153648366e-2, 3.4839207139657522572e-1, 1.5335297523989890804e+0,
    3.5780402569085996758e+0, 3.1598519601132090206e+0, 2.1371214997265515515e+0,
    8.6030097526280260580e-1, 2.7834010353747001060e-3};
inline constexpr double q59[] = {1.1738313872397777529e-6, 1.3858762165532246059e-4,
                                 4.3873424022706935023e-3, 5.3963550303200816744e-2,
                                 3.5609087305900265560e-1, 1.6068377709719017609e+0,
                                 3.9846608184671757296e+0, 4.6632960348736635331e+0,
                                 4.3859045256449554654e+0, 2.2859981272422905412e+0};

// Horner's rule from the highest coefficient down: c[N-1] t^(N-1) + ... + c[0].
template <std::size_t N>
inline double poly(const double (&c)[N], double t) {
  double r = c[N - 1];
  for (std::size_t i = N - 1; i-- > 0;) r = r * t + c[i];
  return r;
}
// A monic polynomial: t^N + c[N-1] t^(N-1) + ... + c[0].
template <std::size_t N>
inline double monic(const double (&c)[N], double t) {
  double r = t + c[N - 1];
  for (std::size_t i = N - 1; i-- > 0;) r = r * t + c[i];
  return r;
}

// Table 59 at t = 1/sqrt(-log(y)) for the tail, y = a or 1 - |x|.
inline double tail(double t) { return poly(p59, t) / (monic(q59, t) * t); }

}  // namespace blair

// inverf(x) for |x| < 1.
inline double erfinv(double x) {
  const double fa = std::fabs(x);
  if (fa >= 0.9375) {
    const double r = blair::tail(1.0 / std::sqrt(-::log1p(-fa)));
    return x < 0.0 ? -r : r;
  }
  if (fa >= 0.75) {
    const double t = x * x - 0.87890625;
    return x * (blair::poly(blair::p39, t) / blair::monic(blair::q39, t));
  }
  const double t = x * x - 0.5625;
  return x * (blair::poly(blair::p18, t) / blair::monic(blair::q18, t));
}

// inverfc(a) for 2^-33 <= a < 2.
inline double erfcinv(double a) {
  if (a >= 0.0625) return erfinv(1.0 - a);
  return blair::tail(1.0 / std::sqrt(-::log(a)));
}

// The math provider of normal_icdf / normal_icdf_double (keel/random/distributions.hpp).
struct curand_host_icdf {
  static float erfcinvf(float a) { return static_cast<float>(erfcinv(static_cast<double>(a))); }
  static double erfcinv(double a) { return detail::erfcinv(a); }
};

}  // namespace keel::random::detail
