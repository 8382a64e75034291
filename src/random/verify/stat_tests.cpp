#include "keel/random/stat_tests.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace keel::random {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double two_sided(double z) { return std::erfc(std::fabs(z) / std::sqrt(2.0)); }

// Regularized upper incomplete gamma Q(a, x) (series / continued fraction, Numerical Recipes).
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double gln = std::lgamma(a);
  if (x < a + 1) {
    double sum = 1.0 / a, del = sum, ap = a;
    for (int n = 0; n < 100000; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - gln);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - gln) * h;
}

}  // namespace

double chi_square_p(double chi2, double dof) { return gamma_q(dof / 2, chi2 / 2); }

test_result chi_square_uniform(std::span<const float> u, int buckets) {
  std::vector<double> count(static_cast<std::size_t>(buckets), 0.0);
  for (float x : u) {
    int b = static_cast<int>(static_cast<double>(x) * buckets);
    count[static_cast<std::size_t>(std::clamp(b, 0, buckets - 1))] += 1;
  }
  const double expect = static_cast<double>(u.size()) / buckets;
  double chi2 = 0;
  for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
  return {"chi-square uniform (" + std::to_string(buckets) + " buckets)", chi2,
          chi_square_p(chi2, buckets - 1)};
}

test_result kolmogorov_smirnov_normal(std::span<const float> z) {
  std::vector<float> s(z.begin(), z.end());
  std::sort(s.begin(), s.end());
  const double n = static_cast<double>(s.size());
  double d = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double f = normal_cdf(s[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  // Asymptotic Kolmogorov distribution with Stephens' small-sample correction.
  const double t = (std::sqrt(n) + 0.12 + 0.11 / std::sqrt(n)) * d;
  double p = 0;
  for (int k = 1; k < 100; ++k) p += 2 * ((k % 2) ? 1 : -1) * std::exp(-2.0 * k * k * t * t);
  return {"Kolmogorov-Smirnov vs normal CDF", d, std::clamp(p, 0.0, 1.0)};
}

test_result anderson_darling_normal(std::span<const float> z) {
  std::vector<float> s(z.begin(), z.end());
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double fi = std::clamp(normal_cdf(s[i]), 1e-300, 1 - 1e-16);
    const double fj = std::clamp(normal_cdf(s[n - 1 - i]), 1e-300, 1 - 1e-16);
    sum += (2.0 * i + 1) * (std::log(fi) + std::log1p(-fj));
  }
  const double a2 = -static_cast<double>(n) - sum / n;
  // Marsaglia & Marsaglia (2004), "Evaluating the Anderson-Darling distribution": ADinf.
  double p;
  if (a2 < 2) {
    p = 1 -
        std::exp(-1.2337141 / a2) / std::sqrt(a2) *
            (2.00012 +
             (.247105 - (.0649821 - (.0347962 - (.011672 - .00168691 * a2) * a2) * a2) * a2) * a2);
  } else {
    p = 1 - std::exp(-std::exp(
                1.0776 -
                (2.30695 - (.43424 - (.082433 - (.008056 - .0003146 * a2) * a2) * a2) * a2) * a2));
  }
  return {"Anderson-Darling vs normal CDF", a2, std::clamp(p, 0.0, 1.0)};
}

std::vector<test_result> moments_normal(std::span<const float> z) {
  const double n = static_cast<double>(z.size());
  double m1 = 0;
  for (float x : z) m1 += x;
  m1 /= n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (float x : z) {
    const double d = x - m1;
    m2 += d * d;
    m3 += d * d * d;
    m4 += d * d * d * d;
  }
  m2 /= n;
  m3 /= n;
  m4 /= n;
  const double skew = m3 / std::pow(m2, 1.5), kurt = m4 / (m2 * m2) - 3;
  const double z_mean = m1 * std::sqrt(n), z_var = (m2 - 1) / std::sqrt(2.0 / n);
  const double z_skew = skew / std::sqrt(6.0 / n), z_kurt = kurt / std::sqrt(24.0 / n);
  return {{"mean (z-score)", z_mean, two_sided(z_mean)},
          {"variance (z-score)", z_var, two_sided(z_var)},
          {"skewness (z-score)", z_skew, two_sided(z_skew)},
          {"excess kurtosis (z-score)", z_kurt, two_sided(z_kurt)}};
}

test_result serial_correlation(std::span<const float> x) {
  const std::size_t n = x.size();
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    den += d * d;
    if (i + 1 < n) num += d * (x[i + 1] - mean);
  }
  const double z = num / den * std::sqrt(static_cast<double>(n));
  return {"lag-1 serial correlation (r * sqrt(n))", z, two_sided(z)};
}

test_result inter_stream_differences(const stream_fn& stream, std::size_t streams,
                                     std::size_t steps) {
  std::vector<std::uint32_t> prev(steps), cur(steps);
  std::vector<double> count(256, 0.0);
  stream(0, steps, prev.data());
  for (std::size_t s = 1; s < streams; ++s) {
    stream(s, steps, cur.data());
    for (std::size_t k = 0; k < steps; ++k) count[(cur[k] - prev[k]) >> 24] += 1;
    prev.swap(cur);
  }
  const double total = static_cast<double>((streams - 1) * steps), expect = total / 256;
  double chi2 = 0;
  for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
  return {"neighbouring-stream differences (chi-square, 255 dof)", chi2, chi_square_p(chi2, 255)};
}

test_result inter_stream_correlation(const stream_fn& stream, std::size_t streams,
                                     std::size_t steps) {
  std::vector<std::uint32_t> a(steps), b(steps);
  auto corr = [&](const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y) {
    double mx = 0, my = 0;
    for (std::size_t k = 0; k < steps; ++k) {
      mx += x[k] * 0x1p-32;
      my += y[k] * 0x1p-32;
    }
    mx /= steps;
    my /= steps;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t k = 0; k < steps; ++k) {
      const double dx = x[k] * 0x1p-32 - mx, dy = y[k] * 0x1p-32 - my;
      sxy += dx * dy;
      sxx += dx * dx;
      syy += dy * dy;
    }
    return sxy / std::sqrt(sxx * syy);
  };
  stream(0, steps, a.data());
  double sum = 0;
  for (std::size_t s = 1; s < streams; ++s) {
    stream(s, steps, b.data());
    sum += corr(a, b);
    a.swap(b);
  }
  // Each r has standard deviation ~ 1/sqrt(steps); neighbouring pairs are (nearly) independent.
  const double pairs = static_cast<double>(streams - 1);
  const double z = sum / pairs * std::sqrt(pairs * steps);
  return {"neighbouring-stream correlation (mean r, z-score)", z, two_sided(z)};
}

}  // namespace keel::random
