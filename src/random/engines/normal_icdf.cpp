#include "normal_icdf.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <vector>

#include "cpu_kernels/simd.hpp"
#include "engine.hpp"
#include "keel/random/erfcinv_tables.hpp"

namespace keel::random::detail {
namespace {

// erfcinv(y) is found as the root of erfc(x) = y for y < 1/2 and of erf(x) = 1 - y above (1 - y
// is exact there), where each is well conditioned. Halley's step for f(x) = erf(x) - a or
// erfc(x) - y, both with f''/f' = -2x: x - f / (f' + x f).
template <class T>
T halley_step(T x, T f, bool complement) {
  const T two_over_sqrt_pi = T(2) / std::sqrt(std::numbers::pi_v<T>);
  const T d = (complement ? -two_over_sqrt_pi : two_over_sqrt_pi) * std::exp(-x * x);
  return x - f / (d + x * f);
}
template <class T>
T residual(T x, T target, bool complement) {
  return complement ? std::erfc(x) - target : std::erf(x) - target;
}

// A safeguarded solver: Halley steps from x, kept inside a bisection bracket.
template <class T>
T solve_from(T x, T target, bool complement) {
  T lo = 0, hi = 30;
  for (int i = 0; i < 200; ++i) {
    const T f = residual(x, target, complement);
    // erfc decreases, erf increases.
    ((f > 0) == complement ? lo : hi) = x;
    const T next = halley_step(x, f, complement);
    // Halley converges cubically: after a step this small only erf's rounding is left.
    if (std::fabs(next - x) <= 64 * std::numeric_limits<T>::epsilon() * x) return next;
    x = next >= lo && next <= hi ? next : (lo + hi) / 2;
  }
  return x;
}

// erfcinv to long double precision: solved in double (fast) and finished in long double.
long double solve(long double target, bool complement) {
  const double start =
      complement ? std::sqrt(-std::log(static_cast<double>(target))) : static_cast<double>(target);
  const double x = solve_from(start, static_cast<double>(target), complement);
  return solve_from(static_cast<long double>(x), target, complement);
}

// The fast path: piecewise polynomials of degree 8, fitted at first use by interpolation at
// Chebyshev nodes of values solve() gives. Below 1/2, y = m * 2^e is split into binades
// 2^-32 .. 2^-2 and each binade into 16 cells of m; the cell and the variable u in [-1, 1)
// come straight from y's bits. At and above 1/2, erfinv(a) / a (a = 1 - y <= 1/2) is an even
// function, fitted in s = a^2 on 4 cells of [0, 1/4]. The relative error is about 1e-16.
constexpr int k_degree = k_icdf_terms - 1;
constexpr int k_tail_cells = k_icdf_tail_cells;
constexpr int k_centre_cells = k_icdf_centre_cells;
constexpr int k_min_exponent = k_icdf_min_exponent;
constexpr int k_binades = -1 - k_min_exponent;  // 2^-32 .. 2^-2, i.e. y < 1/2

struct poly {
  double c[k_degree + 1];  // monomial coefficients in u
  // Estrin's scheme: a shorter dependency chain than Horner's.
  double operator()(double u) const {
    static_assert(k_degree == 8);
    const double u2 = u * u, u4 = u2 * u2;
    const double a = (c[0] + c[1] * u) + u2 * (c[2] + c[3] * u);
    const double b = (c[4] + c[5] * u) + u2 * (c[6] + c[7] * u);
    return a + u4 * (b + u4 * c[8]);
  }
};

// Interpolates f on [-1, 1] at the Chebyshev nodes and returns the polynomial's monomial
// coefficients (computed in long double).
template <class F>
poly fit(F&& f) {
  constexpr int k_nodes = k_degree + 1;
  // cos(pi * i / (2n)) for i in [0, 4n), n = k_nodes: the nodes are cos(pi (2j + 1) / (2n)).
  static const auto cosines = [] {
    std::array<long double, 4 * k_nodes> c;
    for (int i = 0; i < 4 * k_nodes; ++i)
      c[i] = std::cos(std::numbers::pi_v<long double> * i / (2 * k_nodes));
    return c;
  }();
  long double values[k_nodes], cheb[k_nodes] = {}, mono[k_nodes] = {}, t_prev[k_nodes] = {},
                               t_cur[k_nodes] = {}, t_next[k_nodes];
  for (int j = 0; j < k_nodes; ++j) values[j] = f(cosines[2 * j + 1]);
  for (int k = 0; k < k_nodes; ++k) {
    for (int j = 0; j < k_nodes; ++j)
      cheb[k] += values[j] * cosines[k * (2 * j + 1) % (4 * k_nodes)];
    cheb[k] *= (k == 0 ? 1.0L : 2.0L) / k_nodes;
  }
  // Sum cheb[k] T_k(u) with T_0 = 1, T_1 = u, T_{k+1} = 2u T_k - T_{k-1}, in monomials.
  t_prev[0] = 1;
  t_cur[1] = 1;
  mono[0] = cheb[0];
  for (int k = 1; k < k_nodes; ++k) {
    for (int i = 0; i < k_nodes; ++i) mono[i] += cheb[k] * t_cur[i];
    for (int i = 0; i < k_nodes; ++i) t_next[i] = (i > 0 ? 2 * t_cur[i - 1] : 0) - t_prev[i];
    for (int i = 0; i < k_nodes; ++i) {
      t_prev[i] = t_cur[i];
      t_cur[i] = t_next[i];
    }
  }
  poly p;
  for (int i = 0; i < k_nodes; ++i) p.c[i] = static_cast<double>(mono[i]);
  return p;
}

// Horner's rule from the highest coefficient down.
template <std::size_t N>
double horner(const double (&c)[N], double t) {
  double r = c[N - 1];
  for (std::size_t i = N - 1; i-- > 0;) r = r * t + c[i];
  return r;
}

// Table 59 at t = 1/sqrt(-log y), y = a or 1 - |x|.
double blair_tail(const blair_coefficients& b, double t) {
  return horner(b.p59, t) / (horner(b.q59, t) * t);
}

double blair_erfinv(const blair_coefficients& b, double x) {
  const double fa = std::fabs(x);
  if (fa >= 0.9375) {
    const double r = blair_tail(b, 1.0 / std::sqrt(-::log1p(-fa)));
    return x < 0.0 ? -r : r;
  }
  if (fa >= 0.75) {
    const double t = x * x - 0.87890625;
    return x * (horner(b.p39, t) / horner(b.q39, t));
  }
  const double t = x * x - 0.5625;
  return x * (horner(b.p18, t) / horner(b.q18, t));
}

// k_binades * k_tail_cells tail cells, then k_centre_cells centre cells.
constexpr std::size_t k_tail_polys = k_icdf_tail_polys;
static_assert(k_icdf_tail_polys == k_binades * k_tail_cells &&
              sizeof(poly) == k_icdf_terms * sizeof(double));

const std::vector<poly>& table() {
  static const std::vector<poly> t = [] {
    std::vector<poly> s;
    s.reserve(k_tail_polys + k_centre_cells);
    for (int b = 0; b < k_binades; ++b)
      for (int c = 0; c < k_tail_cells; ++c)
        s.push_back(fit([&](long double u) {
          const long double m = 1 + (c + 0.5L + u / 2) / k_tail_cells;
          return solve(std::ldexp(m, k_min_exponent + b), true);
        }));
    for (int c = 0; c < k_centre_cells; ++c)
      s.push_back(fit([&](long double u) {
        const long double a = std::sqrt((c + 0.5L + u / 2) / (4 * k_centre_cells));
        return solve(a, false) / a;
      }));
    return s;
  }();
  return t;
}

}  // namespace

const double* erfcinv_coefficients() { return table().front().c; }

double erfcinv_fast(float y) {
  const std::vector<poly>& t = table();
  if (y >= 0.5f) {
    const double a = 1.0 - static_cast<double>(y);
    const double s = a * a * (4 * k_centre_cells);  // in [0, k_centre_cells]
    const int c = s < k_centre_cells ? static_cast<int>(s) : k_centre_cells - 1;
    return a * t[k_tail_polys + c](2 * (s - c) - 1);
  }
  std::uint32_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  const int b = static_cast<int>(bits >> 23) - 127 - k_min_exponent;
  if (b < 0) return std::numeric_limits<double>::quiet_NaN();
  const std::uint32_t frac = bits & 0x7fffffu;
  const int c = static_cast<int>(frac >> 19);
  const double u = (static_cast<double>(frac & 0x7ffffu) - 0x1p18) * 0x1p-18;
  return t[static_cast<std::size_t>(b) * k_tail_cells + c](u);
}

float erfcinv_float(float y) {
  const double x = erfcinv_fast(y);  // +0 for y = 1
  // Near a rounding boundary between two floats (or outside the table), decide in long double.
  constexpr double k_eps = 0x1p-42;
  if (std::isnan(x) || static_cast<float>(x * (1 - k_eps)) != static_cast<float>(x * (1 + k_eps)))
      [[unlikely]] {
    const bool complement = y < 0.5f;
    const long double target = complement ? static_cast<long double>(y) : 1.0L - y;
    if (std::isnan(x)) return static_cast<float>(solve(target, complement));
    long double xl = x;
    for (int i = 0; i < 2; ++i) xl = halley_step(xl, residual(xl, target, complement), complement);
    return static_cast<float>(xl);
  }
  return static_cast<float>(x);
}

blair_coefficients blair_from(const erfcinv_tables& t) {
  blair_coefficients b{};
  auto put = [](double* to, const auto& from, std::size_t monic_at) {
    std::copy(from.begin(), from.end(), to);
    if (monic_at) to[monic_at] = 1.0;
  };
  put(b.p18, t.p18, 0);
  put(b.q18, t.q18, t.q18.size());
  put(b.p39, t.p39, 0);
  put(b.q39, t.q39, t.q39.size());
  put(b.p59, t.p59, 0);
  put(b.q59, t.q59, t.q59.size());
  return b;
}

double erfcinv_blair(const blair_coefficients& b, double a) {
  if (a >= 0.0625) return blair_erfinv(b, 1.0 - a);
  return blair_tail(b, 1.0 / std::sqrt(-::log(a)));
}

double erfcinv_keel(double a) {
  if (a < 0.5) return static_cast<double>(solve(a, true));
  const long double x = 1.0L - a;  // exact; erfinv is odd
  return static_cast<double>(x < 0 ? -solve(-x, false) : solve(x, false));
}

const blair_coefficients* curand_erfcinv() {
  static const std::optional<blair_coefficients> b = []() -> std::optional<blair_coefficients> {
    const auto& lookup = erfcinv_default_tables();
    if (!lookup.tables) return std::nullopt;
    return blair_from(*lookup.tables);
  }();
  return b ? &*b : nullptr;
}

double erfcinv_double(double a) {
  const blair_coefficients* b = curand_erfcinv();
  return b ? erfcinv_blair(*b, a) : erfcinv_keel(a);
}

void normal_icdf_doubles(const std::uint32_t* w, std::size_t n, double* z) {
  std::size_t done = 0;
  if (const blair_coefficients* b = curand_erfcinv()) {
    using kernel =
        std::size_t (*)(const blair_coefficients&, const std::uint32_t*, std::size_t, double*);
    if (const kernel k = simd::by_level<kernel>(nullptr, simd::avx2::normal_icdf_doubles,
                                                simd::avx512::normal_icdf_doubles))
      done = k(*b, w, n, z);
  }
  for (std::size_t i = done; i < n; ++i) z[i] = normal_icdf_double(w[i]);
}

void normal_icdf_floats(const std::uint32_t* w, std::size_t n, float* z) {
  std::size_t done = 0;
  using kernel = std::size_t (*)(const std::uint32_t*, std::size_t, float*);
  if (const kernel k = simd::by_level<kernel>(nullptr, simd::avx2::normal_icdf_floats,
                                              simd::avx512::normal_icdf_floats))
    done = k(w, n, z);
  for (std::size_t i = done; i < n; ++i) z[i] = normal_icdf_float(w[i]);
}

bool normal_icdf_distribution(const request& r, const std::uint32_t* w, std::size_t n,
                              std::size_t at) {
  switch (r.what) {
    case kind::normal:
    case kind::log_normal: {
      const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
      float* out = static_cast<float*>(r.out) + at;
      normal_icdf_floats(w, n, out);
      if (r.what == kind::normal)
        for (std::size_t i = 0; i < n; ++i) out[i] = out[i] * sd + mean;
      else
        for (std::size_t i = 0; i < n; ++i) out[i] = ::expf(out[i] * sd + mean);
      return true;
    }
    case kind::normal_double:
    case kind::log_normal_double: {
      double* out = static_cast<double*>(r.out) + at;
      normal_icdf_doubles(w, n, out);
      if (r.what == kind::normal_double)
        for (std::size_t i = 0; i < n; ++i) out[i] = out[i] * r.stddev + r.mean;
      else
        for (std::size_t i = 0; i < n; ++i) out[i] = ::exp(out[i] * r.stddev + r.mean);
      return true;
    }
    default: return false;
  }
}

}  // namespace keel::random::detail
