#include "normal_icdf.hpp"

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

namespace keel::random::detail {
namespace {

// erfcinv(y) is found as the root of erfc(x) = y for y < 1/2 and of erf(x) = 1 - y above (1 - y
// is exact there), where each is well conditioned. One Halley step for f(x) = erf(x) - a or
// erfc(x) - y, both with f''/f' = -2x: x - f / (f' + x f).
template <class T>
T halley(T x, T target, bool complement) {
  const T two_over_sqrt_pi = T(2) / std::sqrt(std::numbers::pi_v<T>);
  const T f = complement ? std::erfc(x) - target : std::erf(x) - target;
  const T d = (complement ? -two_over_sqrt_pi : two_over_sqrt_pi) * std::exp(-x * x);
  return x - f / (d + x * f);
}

// A safeguarded solver for the table's nodes: bisection brackets the root, Halley steps
// polish it, in long double.
long double solve(long double target, bool complement) {
  long double lo = 0, hi = 30, x = complement ? std::sqrt(-std::log(target)) : target;
  for (int i = 0; i < 200; ++i) {
    const long double v = complement ? std::erfc(x) - target : std::erf(x) - target;
    // erfc decreases, erf increases.
    if ((v > 0) == complement)
      lo = x;
    else
      hi = x;
    long double next = halley(x, target, complement);
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    if (next == x) break;
    x = next;
  }
  return x;
}

constexpr int k_cells = 64;                // per binade (erfc side) or over [0, 1/2] (erf side)
constexpr int k_min_exponent = -32;        // smallest binade of the table: [2^-32, 2^-31)
constexpr int k_binades = -1 - k_min_exponent;  // 2^-32 .. 2^-2, i.e. y < 1/2

struct start_table {
  // erfc side: z at y = (1 + k/64) * 2^e, 65 nodes per binade e.
  std::vector<double> tail;
  // erf side: erfinv(a) / a at a = k / 128, k = 0..64 (the ratio is smooth and even).
  std::vector<double> centre;
};

const start_table& table() {
  static const start_table t = [] {
    start_table s;
    s.tail.resize(static_cast<std::size_t>(k_binades) * (k_cells + 1));
    for (int b = 0; b < k_binades; ++b)
      for (int k = 0; k <= k_cells; ++k) {
        const long double y = std::ldexp(1.0L + static_cast<long double>(k) / k_cells, k_min_exponent + b);
        s.tail[static_cast<std::size_t>(b) * (k_cells + 1) + k] = static_cast<double>(solve(y, true));
      }
    s.centre.resize(k_cells + 1);
    s.centre[0] = std::sqrt(std::numbers::pi) / 2;
    for (int k = 1; k <= k_cells; ++k) {
      const long double a = static_cast<long double>(k) / (2 * k_cells);
      s.centre[k] = static_cast<double>(solve(a, false) / a);
    }
    return s;
  }();
  return t;
}

// The starting point: linear interpolation in the table, relative error below ~1e-5.
double start(float y, bool complement, double a) {
  const start_table& t = table();
  if (!complement) {
    const double u = a * (2 * k_cells);
    const int k = static_cast<int>(u) < k_cells ? static_cast<int>(u) : k_cells - 1;
    const double w = u - k;
    return a * (t.centre[k] * (1 - w) + t.centre[k + 1] * w);
  }
  int e;
  const float m = std::frexp(y, &e);  // y = m * 2^e, m in [1/2, 1)
  const int b = e - 1 - k_min_exponent;
  if (b < 0) return std::sqrt(-std::log(static_cast<double>(y)));  // below the table
  const double u = (2.0 * m - 1.0) * k_cells;
  const int k = static_cast<int>(u);
  const double w = u - k;
  const double* row = &t.tail[static_cast<std::size_t>(b) * (k_cells + 1)];
  return row[k] * (1 - w) + row[k + 1] * w;
}

}  // namespace

float erfcinv_float(float y) {
  const bool complement = y < 0.5f;
  const double a = complement ? 0.0 : 1.0 - static_cast<double>(y);
  const double target = complement ? static_cast<double>(y) : a;
  if (!complement && a == 0) return 0.0f;
  double x = start(y, complement, a);
  x = halley(x, target, complement);
  if (complement && y < 0x1p-32f) x = halley(halley(x, target, true), target, true);  // rough start
  // Near a rounding boundary between two floats, decide in long double.
  constexpr double eps = 0x1p-40;
  if (static_cast<float>(x * (1 - eps)) != static_cast<float>(x * (1 + eps))) {
    long double xl = x;
    for (int i = 0; i < 2; ++i) xl = halley(xl, static_cast<long double>(target), complement);
    return static_cast<float>(xl);
  }
  return static_cast<float>(x);
}

}  // namespace keel::random::detail
