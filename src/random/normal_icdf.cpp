#include "normal_icdf.hpp"

#include <cmath>
#include <vector>

#include "keel/random/distributions.hpp"
#include "mt19937_kernels.hpp"
#include "simd.hpp"

namespace keel::random::detail {
namespace {

// erfcinv(y) = erfinv(w), w = 1 - y (exact in double for float y >= 1/4), written as
// w * H(w^2) on [1/4, 1]; below 1/4 as T(t), t = sqrt(-ln y), for y down to 2^-32
// (the smallest 2p). Both H and T are analytic on their intervals, so Chebyshev
// interpolation converges geometrically: degree 19 gives H to 7e-16, degree 27 T to 2e-15.
constexpr double k_y_split = 0.25;
constexpr double k_u_max = (1 - k_y_split) * (1 - k_y_split);
constexpr double k_t_min = 1.1774100225154747;  // sqrt(ln 4)
constexpr double k_t_max = 4.75;                // > sqrt(32 ln 2)
constexpr int k_h_terms = 20, k_t_terms = 28;
// Bound on the relative error of the double value, with a wide margin over the measured one
// (erfcinv_fit_error; the tests check it). Inside it, the float rounding is decided exactly.
constexpr double k_margin = 1e-13;

constexpr long double k_2_sqrt_pi = 1.1283791670955125738961589031215452L;

long double erfinv_newton(long double w, long double x) {
  for (int i = 0; i < 3; ++i) x -= (erfl(x) - w) / (k_2_sqrt_pi * expl(-x * x));
  return x;
}
long double erfcinv_newton(long double y, long double x) {
  for (int i = 0; i < 3; ++i) x += (erfcl(x) - y) / (k_2_sqrt_pi * expl(-x * x));
  return x;
}
// A start for Newton's method anywhere in (0, 1]: bisection on erfc.
long double erfcinv_bisect(long double y) {
  long double lo = 0, hi = 7;
  for (int i = 0; i < 64; ++i) {
    const long double m = (lo + hi) / 2;
    (erfcl(m) > y ? lo : hi) = m;
  }
  return (lo + hi) / 2;
}

// The Chebyshev interpolant of f on [a, b] with `terms` terms (at the Chebyshev points).
struct chebyshev {
  double a, b;
  std::vector<double> c;

  template <class F>
  chebyshev(F f, double lo, double hi, int terms) : a(lo), b(hi), c(terms) {
    const long double pi = 3.1415926535897932384626433832795029L;
    std::vector<long double> fv(terms);
    for (int i = 0; i < terms; ++i) fv[i] = f(0.5L * (a + b) + 0.5L * (b - a) * cosl(pi * (i + 0.5L) / terms));
    for (int k = 0; k < terms; ++k) {
      long double s = 0;
      for (int i = 0; i < terms; ++i) s += fv[i] * cosl(pi * k * (i + 0.5L) / terms);
      c[k] = static_cast<double>(s * 2 / terms / (k == 0 ? 2 : 1));
    }
  }
  double map(double x) const { return (2 * x - a - b) / (b - a); }
};

struct fits {
  chebyshev h, t;
};

const fits& erfcinv_fits() {
  static const fits* f = new fits{chebyshev(
                                      [](long double u) -> long double {
                                        if (u == 0) return 0.88622692545275801364908374167057259L;  // sqrt(pi) / 2
                                        const long double w = sqrtl(u);
                                        return erfinv_newton(w, erfcinv_bisect(1 - w)) / w;
                                      },
                                      0.0, k_u_max, k_h_terms),
                                  chebyshev(
                                      [](long double t) -> long double {
                                        const long double y = expl(-t * t);
                                        return erfcinv_newton(y, erfcinv_bisect(y));
                                      },
                                      k_t_min, k_t_max, k_t_terms)};
  return *f;
}

// The vector kernels at the SIMD level in use (every level gives the same values).
void chebyshev_sum(const double* c, int terms, const double* x, double* r, std::size_t n) {
  switch (simd::active_level()) {
    case simd::level::avx512: return simd::avx512::chebyshev_sum(c, terms, x, r, n);
    case simd::level::avx2: return simd::avx2::chebyshev_sum(c, terms, x, r, n);
    default: return simd::scalar::chebyshev_sum(c, terms, x, r, n);
  }
}
void icdf_prepare(const std::uint32_t* x, float* y, float* s, std::size_t n) {
  switch (simd::active_level()) {
    case simd::level::avx512: return simd::avx512::icdf_prepare(x, y, s, n);
    case simd::level::avx2: return simd::avx2::icdf_prepare(x, y, s, n);
    default: return simd::scalar::icdf_prepare(x, y, s, n);
  }
}
std::size_t icdf_finish(const double* e, const float* s, float* z, std::uint16_t* unsure, std::size_t n) {
  switch (simd::active_level()) {
    case simd::level::avx512: return simd::avx512::icdf_finish(e, s, z, k_margin, unsure, n);
    case simd::level::avx2: return simd::avx2::icdf_finish(e, s, z, k_margin, unsure, n);
    default: return simd::scalar::icdf_finish(e, s, z, k_margin, unsure, n);
  }
}

long double erfcinv_exact(double y, double start) {
  return y >= k_y_split ? erfinv_newton(1.0L - y, start) : erfcinv_newton(y, start);
}

constexpr std::size_t k_batch = 512;
constexpr std::size_t k_pad = 32;  // the vector kernel's widest step (4 vectors of 8 doubles)

// erfcinv(y[i]) in double for n <= k_batch floats in (0, 1): the arguments of the two fits
// gathered, summed by the vector kernel (padded to whole steps with zeros), scattered back.
void erfcinv_double(const float* y, double* e, std::size_t n) {
  const fits& f = erfcinv_fits();
  double xh[k_batch + k_pad], xt[k_batch + k_pad], rh[k_batch + k_pad], rt[k_batch + k_pad];
  std::uint16_t ih[k_batch], it[k_batch];
  std::size_t nh = 0, nt = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (y[i] >= k_y_split) {
      const double w = 1.0 - y[i];
      xh[nh] = f.h.map(w * w);
      ih[nh++] = static_cast<std::uint16_t>(i);
    } else {
      xt[nt] = f.t.map(std::sqrt(-std::log(static_cast<double>(y[i]))));
      it[nt++] = static_cast<std::uint16_t>(i);
    }
  }
  const std::size_t ph = (nh + k_pad - 1) / k_pad * k_pad, pt = (nt + k_pad - 1) / k_pad * k_pad;
  for (std::size_t j = nh; j < ph; ++j) xh[j] = 0.0;
  for (std::size_t j = nt; j < pt; ++j) xt[j] = 0.0;
  chebyshev_sum(f.h.c.data(), k_h_terms, xh, rh, ph);
  chebyshev_sum(f.t.c.data(), k_t_terms, xt, rt, pt);
  for (std::size_t j = 0; j < nh; ++j) e[ih[j]] = (1.0 - y[ih[j]]) * rh[j];
  for (std::size_t j = 0; j < nt; ++j) e[it[j]] = rt[j];
}

float round_erfcinv(float y, double e) {
  const float lo = static_cast<float>(e * (1 - k_margin)), hi = static_cast<float>(e * (1 + k_margin));
  if (lo == hi) return lo;
  return static_cast<float>(erfcinv_exact(y, e));
}

}  // namespace

float erfcinv_float(float y) {
  if (y >= 1.0f) return 0.0f;
  double e;
  erfcinv_double(&y, &e, 1);
  return round_erfcinv(y, e);
}

void normal_icdf_float(const std::uint32_t* x, float* z, std::size_t n) {
  for (std::size_t i = 0; i < n; i += k_batch) {
    const std::size_t m = n - i < k_batch ? n - i : k_batch;
    float y[k_batch], s[k_batch];
    double e[k_batch];
    std::uint16_t unsure[k_batch];
    icdf_prepare(x + i, y, s, m);
    erfcinv_double(y, e, m);
    const std::size_t k = icdf_finish(e, s, z + i, unsure, m);
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t l = unsure[j];
      z[i + l] = s[l] == 0.0f ? -0.0f : -s[l] * static_cast<float>(erfcinv_exact(y[l], e[l]));
    }
  }
}

float normal_icdf_float(std::uint32_t x) {
  float z;
  normal_icdf_float(&x, &z, 1);
  return z;
}

double erfcinv_fit_error(std::uint32_t samples) {
  double worst = 0;
  const std::uint32_t step = 0x80000000u / samples;
  for (std::uint32_t k = 0; k < samples; ++k) {
    // Spread over the half range, the top words (y near 1) and the bottom ones (y near 2^-32).
    for (std::uint32_t x : {k * step + (k % 977), 0x80000000u - 1 - k, k}) {
      const float y = 2.0f * uniform_float(x);
      if (y >= 1.0f) continue;
      double e;
      erfcinv_double(&y, &e, 1);
      const long double ex = erfcinv_exact(y, e);
      worst = std::fmax(worst, static_cast<double>(fabsl((e - ex) / ex)));
    }
  }
  return worst;
}

}  // namespace keel::random::detail
