#include "normal_icdf.hpp"

#include <cmath>
#include <vector>

#include "keel/random/distributions.hpp"

namespace keel::random::detail {
namespace {

// erfcinv(y) = erfinv(w), w = 1 - y (exact in double for float y >= 1/4), written as
// w * H(w^2) on [1/4, 1]; below 1/4 as T(t), t = sqrt(-ln y), for y down to 2^-32
// (the smallest 2p). Both H and T are analytic on their intervals, so Chebyshev
// interpolation converges geometrically; each is split into pieces of low degree.
constexpr double k_y_split = 0.25;
constexpr double k_u_max = (1 - k_y_split) * (1 - k_y_split);
constexpr double k_t_min = 1.1774100225154747;  // sqrt(ln 4)
constexpr double k_t_max = 4.75;                // > sqrt(32 ln 2)
constexpr int k_h_pieces = 2, k_t_pieces = 3, k_degree = 16;
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

// Chebyshev interpolants of degree k_degree - 1 on `pieces` equal parts of [lo, hi], flat:
// coefficient k of piece j is c[j * k_degree + k].
struct piecewise {
  double lo, scale;  // piece of x: (x - lo) * scale
  int pieces;
  std::vector<double> c;

  template <class F>
  piecewise(F f, double a, double b, int n) : lo(a), scale(n / (b - a)), pieces(n), c(n * k_degree) {
    const long double pi = 3.1415926535897932384626433832795029L;
    std::vector<long double> fv(k_degree);
    for (int j = 0; j < n; ++j) {
      const long double pa = a + (b - a) * j / n, pb = a + (b - a) * (j + 1) / n;
      for (int i = 0; i < k_degree; ++i)
        fv[i] = f(0.5L * (pa + pb) + 0.5L * (pb - pa) * cosl(pi * (i + 0.5L) / k_degree));
      for (int k = 0; k < k_degree; ++k) {
        long double s = 0;
        for (int i = 0; i < k_degree; ++i) s += fv[i] * cosl(pi * k * (i + 0.5L) / k_degree);
        c[j * k_degree + k] = static_cast<double>(s * 2 / k_degree / (k == 0 ? 2 : 1));
      }
    }
  }
  // The piece of x and x mapped to [-1, 1] within it.
  int piece(double x, double& u) const {
    const double s = (x - lo) * scale;
    int j = static_cast<int>(s);
    j = j < 0 ? 0 : (j >= pieces ? pieces - 1 : j);
    u = 2 * (s - j) - 1;
    return j;
  }
};

struct fits {
  piecewise h, t;
};

const fits& erfcinv_fits() {
  static const fits* f = new fits{
      piecewise(
          [](long double u) -> long double {
            if (u == 0) return 0.88622692545275801364908374167057259L;  // sqrt(pi) / 2
            const long double w = sqrtl(u);
            return erfinv_newton(w, erfcinv_bisect(1 - w)) / w;
          },
          0.0, k_u_max, k_h_pieces),
      piecewise(
          [](long double t) -> long double {
            const long double y = expl(-t * t);
            return erfcinv_newton(y, erfcinv_bisect(y));
          },
          k_t_min, k_t_max, k_t_pieces)};
  return *f;
}

// Clenshaw's recurrence on `n` <= 16 independent values at once (interleaved, so the
// dependent chains overlap): r[l] = sum_k c_l[k] T_k(u[l]).
void clenshaw(const double* const* c, const double* u, double* r, int n) {
  double b1[16] = {}, b2[16] = {};
  for (int k = k_degree - 1; k >= 1; --k)
    for (int l = 0; l < n; ++l) {
      const double t = 2 * u[l] * b1[l] - b2[l] + c[l][k];
      b2[l] = b1[l];
      b1[l] = t;
    }
  for (int l = 0; l < n; ++l) r[l] = u[l] * b1[l] - b2[l] + c[l][0];
}

long double erfcinv_exact(double y, double start) {
  return y >= k_y_split ? erfinv_newton(1.0L - y, start) : erfcinv_newton(y, start);
}

// erfcinv(y[l]) in double for n <= 16 floats in (0, 1).
void erfcinv_double(const float* y, double* e, int n) {
  const fits& f = erfcinv_fits();
  const double* c[16];
  double u[16], w[16];
  for (int l = 0; l < n; ++l) {
    if (y[l] >= k_y_split) {
      w[l] = 1.0 - y[l];
      c[l] = &f.h.c[f.h.piece(w[l] * w[l], u[l]) * k_degree];
    } else {
      w[l] = 1.0;
      c[l] = &f.t.c[f.t.piece(std::sqrt(-std::log(static_cast<double>(y[l]))), u[l]) * k_degree];
    }
  }
  clenshaw(c, u, e, n);
  for (int l = 0; l < n; ++l) e[l] *= w[l];
}

float round_erfcinv(float y, double e) {
  if (y >= 1.0f) return 0.0f;
  const float lo = static_cast<float>(e * (1 - k_margin)), hi = static_cast<float>(e * (1 + k_margin));
  if (lo == hi) return lo;
  return static_cast<float>(erfcinv_exact(y, e));
}

}  // namespace

float erfcinv_float(float y) {
  double e = 0;
  if (y < 1.0f) erfcinv_double(&y, &e, 1);
  return round_erfcinv(y, e);
}

void normal_icdf_float(const std::uint32_t* x, float* z, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const int m = static_cast<int>(n - i < 16 ? n - i : 16);
    float y[16], s[16];
    for (int l = 0; l < m; ++l) {
      std::uint32_t v = x[i + l];
      s[l] = 1.41421356f;
      if (v > 0x80000000u) {
        v = 0xffffffffu - v;
        s[l] = -s[l];
      }
      y[l] = 2.0f * uniform_float(v);
      // y = 1 (x = 2^31) is erfcinv's zero; evaluate at any valid point instead.
      if (y[l] >= 1.0f) y[l] = 0.5f, s[l] = 0.0f;
    }
    double e[16];
    erfcinv_double(y, e, m);
    for (int l = 0; l < m; ++l) z[i + l] = s[l] == 0.0f ? -0.0f : -s[l] * round_erfcinv(y[l], e[l]);
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
