// cuRAND's host Poisson: the square-histogram table, the inversion and the normal
// approximation, over any engine's word and normal streams.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "cpu_kernels/simd.hpp"
#include "keel/core/error.hpp"
#include "keel/random/poisson.hpp"
#include "poisson_engine.hpp"

namespace keel::random {

namespace {
// p_k = exp(k log(lambda) - lambda - L_k) in double, L_k = log 1 + ... + log k summed in that
// order (glibc's lgamma(k + 1) gives other last bits, and for lambda near 1000 a different
// count about once in 4e9 draws), for the consecutive k whose p_k is not 0 (no
// normalisation), starting at `first`.
std::vector<double> poisson_terms(double lambda, std::uint32_t& first) {
  const double log_lambda = std::log(lambda);
  std::vector<double> p;
  double log_factorial = 0;  // log 1 + ... + log k, summed in this order
  for (std::uint32_t k = 0;; ++k) {
    if (k > 0) log_factorial += std::log(static_cast<double>(k));
    const double pk = std::exp(k * log_lambda - lambda - log_factorial);
    if (pk > 0) {
      if (p.empty()) first = k;
      p.push_back(pk);
    } else if (!p.empty()) {
      return p;
    }
  }
}
}  // namespace

// libcurand's construction, as measured (every step is needed for the same cells):
//  1. The n terms p_k of poisson_terms, starting at first_; a = 1/n.
//  2. Robin Hood pairing with a fixed order: the donor is the highest-index entry with
//     p >= a; sweeps over i = 0..n-1 give each not yet settled entry with p_i < a to the
//     donor (alias_i = donor, V_i = i*a + p_i, p_donor -= a - p_i, p_i = a); a donor that
//     drops below a is replaced by the next rich entry below it and is itself settled by a
//     later sweep. Sweeps repeat until one settles nothing. Untouched entries keep
//     V_i = (i + 1)*a, alias_i = i.
//  3. Sampling: u = (w + 1) * 2^-32 (MT19937: (w + 0.5) * 2^-32), j = floor(n u), count =
//     u < V_j ? first + j : first + alias_j. Both are exact on integers: n (2 w + 2) < 2^46,
//     and u < V_j <=> w < ceil(V_j 2^32) - 1 (MT19937: ceil(V_j 2^32 - 0.5)), the cell's
//     threshold.
poisson_table::poisson_table(double lambda, uniform u) : lambda_(lambda), uniform_(u) {
  if (!(lambda > 0 && lambda < k_poisson_table_limit))
    throw invalid_argument("keel::random::poisson_table: lambda " + std::to_string(lambda) +
                           " is outside (0, 2000)");
  std::vector<double> p = poisson_terms(lambda, first_);
  const std::size_t n = p.size();
  size_ = static_cast<std::uint32_t>(n);
  const double a = 1.0 / static_cast<double>(n);
  std::vector<double> v(n);
  std::vector<std::uint32_t> alias(n);
  std::vector<char> settled(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<double>(i + 1) * a;
    alias[i] = static_cast<std::uint32_t>(i);
  }
  // The next donor below index `from` (n when there is none).
  auto donor_below = [&](std::size_t from) {
    while (from-- > 0)
      if (p[from] >= a && !settled[from]) return from;
    return n;
  };
  std::size_t donor = donor_below(n);
  for (bool progress = true; progress && donor != n;) {
    progress = false;
    for (std::size_t i = 0; i < n && donor != n; ++i) {
      if (settled[i] || !(p[i] < a)) continue;
      alias[i] = static_cast<std::uint32_t>(donor);
      v[i] = static_cast<double>(i) * a + p[i];
      p[donor] -= a - p[i];
      p[i] = a;
      settled[i] = 1;
      progress = true;
      if (p[donor] < a) donor = donor_below(donor);
    }
  }
  cells_.resize(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    // u < V_i as a word: w + 1 < V_i 2^32, or w + 0.5 < V_i 2^32 (V_i 2^32 - 0.5 is exact).
    const double t =
        u == uniform::plus_one ? std::ceil(v[i] * 0x1p32) - 1.0 : std::ceil(v[i] * 0x1p32 - 0.5);
    cells_[i].threshold = t <= 0            ? 0u
                          : t >= 0x1p32 - 1 ? 0xffffffffu
                                            : static_cast<std::uint32_t>(t);
    cells_[i].alias = first_ + alias[i];
  }
  cells_[n] = {0, first_};
}

// u = (w + 1) 2^-32 > P_k <=> w >= floor(P_k 2^32), P_k 2^32 being exact, so the count of the
// word w is first + #{j : floor(P_j 2^32) <= w}, the j running up to the last sum that grows.
poisson_inversion::poisson_inversion(double lambda) : lambda_(lambda) {
  if (!(lambda > 0 && lambda <= k_poisson_inversion_limit))
    throw invalid_argument("keel::random::poisson_inversion: lambda " + std::to_string(lambda) +
                           " is outside (0, 8000]");
  const std::vector<double> p = poisson_terms(lambda, first_);
  std::vector<double> sums(p.size());
  std::size_t last = 0;  // the last j at which the running sum grows
  double sum = 0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    if (sum + p[j] != sum) last = j;
    sums[j] = sum += p[j];
  }
  for (std::size_t j = 0; j < last && sums[j] * 0x1p32 < 0x1p32; ++j)
    thresholds_.push_back(static_cast<std::uint32_t>(sums[j] * 0x1p32));
  guide_.resize((std::size_t{1} << k_guide_bits) + 1);
  for (std::size_t b = 0; b < guide_.size(); ++b) {
    const std::uint64_t word = std::uint64_t{b} << (32 - k_guide_bits);
    guide_[b] = static_cast<std::uint32_t>(
        std::lower_bound(thresholds_.begin(), thresholds_.end(), word,
                         [](std::uint32_t t, std::uint64_t w) { return t < w; }) -
        thresholds_.begin());
  }
}

std::uint32_t poisson_inversion::operator()(std::uint32_t w) const noexcept {
  const std::uint32_t* t = thresholds_.data();
  const std::size_t b = w >> (32 - k_guide_bits);
  return first_ +
         static_cast<std::uint32_t>(std::upper_bound(t + guide_[b], t + guide_[b + 1], w) - t);
}

void poisson_inversion::map(std::uint32_t* words, std::size_t n) const noexcept {
  for (std::size_t i = 0; i < n; ++i) words[i] = (*this)(words[i]);
}

namespace {

static_assert(sizeof(poisson_table::cell) == 8,
              "the SIMD lookups gather a cell as one 64-bit word");

void map_scalar(const poisson_table& t, std::uint32_t* w, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) w[i] = t(w[i]);
}

#if defined(__x86_64__)
// Four words per step: j = (n w + n) >> 32 (or (2 n w + n) >> 33) in 64-bit lanes, one gather of
// the cells {threshold, alias}, then first + j where w < threshold, alias elsewhere. Also the
// AVX-512 level's kernel: 512-bit gathers were slower (AMD EPYC of the reference machine, 0.9-1.2
// against 0.8 ns per word; scalar 1.1-1.3).
__attribute__((target("avx2"))) void map_avx2(const poisson_table& t, std::uint32_t* w,
                                              std::size_t n) {
  const auto* cells = reinterpret_cast<const long long*>(t.cells().data());
  const __m256i size = _mm256_set1_epi64x(t.size()), first = _mm256_set1_epi64x(t.first());
  const __m256i low = _mm256_set1_epi64x(0xffffffffll), all = _mm256_set1_epi64x(-1);
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
  const bool half = t.convention() == poisson_table::uniform::plus_half;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i x =
        _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    const __m256i sx = _mm256_mul_epu32(x, size);
    const __m256i j = half ? _mm256_srli_epi64(_mm256_add_epi64(_mm256_slli_epi64(sx, 1), size), 33)
                           : _mm256_srli_epi64(_mm256_add_epi64(sx, size), 32);
    const __m256i c = _mm256_mask_i64gather_epi64(_mm256_setzero_si256(), cells, j, all, 8);
    // Both sides are below 2^32, so the signed 64-bit comparison is the unsigned one.
    const __m256i own = _mm256_cmpgt_epi64(_mm256_and_si256(c, low), x);
    const __m256i r = _mm256_blendv_epi8(_mm256_srli_epi64(c, 32), _mm256_add_epi64(j, first), own);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w + i),
                     _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(r, even)));
  }
  map_scalar(t, w + i, n - i);
}
#endif

}  // namespace

void poisson_table::map(std::uint32_t* words, std::size_t n) const noexcept {
#if defined(__x86_64__)
  switch (detail::simd::active_level()) {
    case detail::simd::level::avx512:
    case detail::simd::level::avx2: return map_avx2(*this, words, n);
    default: break;
  }
#endif
  map_scalar(*this, words, n);
}

namespace {
#if defined(__x86_64__)
// Four at a time in double: the same multiply and two adds, each rounded, and truncation
// (the counts are below 2^31).
__attribute__((target("avx2"))) std::size_t from_normals_avx2(const float* z, std::uint32_t* out,
                                                              std::size_t n, double lambda,
                                                              double s) {
  const __m256d vs = _mm256_set1_pd(s), vl = _mm256_set1_pd(lambda), half = _mm256_set1_pd(0.5);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(z + i));
    const __m256d k = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(vs, d), vl), half);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvttpd_epi32(k));
  }
  return i;
}
#endif
}  // namespace

void poisson_from_normals(const float* z, std::uint32_t* out, std::size_t n,
                          double lambda) noexcept {
  if (std::isnan(lambda)) {
    std::fill(out, out + n, 0u);
    return;
  }
  const double s = std::sqrt(lambda);
  std::size_t i = 0;
#if defined(__x86_64__)
  if (detail::simd::active_level() != detail::simd::level::scalar)
    i = from_normals_avx2(z, out, n, lambda, s);
#endif
  for (; i < n; ++i) {
    float zi;
    std::memcpy(&zi, z + i, 4);  // `out` may alias `z`
    // NOLINTNEXTLINE(bugprone-incorrect-roundings): libcurand truncates x + 0.5, not lround
    const std::uint32_t k = static_cast<std::uint32_t>(s * static_cast<double>(zi) + lambda + 0.5);
    std::memcpy(out + i, &k, 4);
  }
}

namespace detail {

status generate_poisson(engine& e, rng_type type, poisson_cache& cache, std::uint32_t* out,
                        std::size_t n, double lambda, unsigned threads) {
  if (n == 0) return status::success;
  if (lambda <= 0 || lambda > k_poisson_max_lambda) return status::out_of_range;
  // Post-processing in place, in chunks of whole cache lines, on the engine's worker count.
  auto each_chunk = [&](auto&& fn) {
    constexpr std::size_t k_chunk = 1 << 14;
    parallel_for((n + k_chunk - 1) / k_chunk, workers_for(n, threads),
                 [&](std::size_t cb, std::size_t ce) {
                   for (std::size_t c = cb; c < ce; ++c)
                     fn(c * k_chunk, std::min(n, (c + 1) * k_chunk));
                 });
  };
  const poisson_method method = poisson_method_for(type, lambda);
  if (method == poisson_method::table || method == poisson_method::inversion) {
    if (const status s = e.generate(request{kind::u32, out, n, 0.0, 1.0, threads});
        s != status::success)
      return s;
    if (method == poisson_method::table) {
      const auto u = type == rng_type::mt19937 ? poisson_table::uniform::plus_half
                                               : poisson_table::uniform::plus_one;
      if (!cache.table || cache.table->lambda() != lambda || cache.table->convention() != u)
        cache.table = std::make_unique<const poisson_table>(lambda, u);
      each_chunk([&](std::size_t b, std::size_t end) { cache.table->map(out + b, end - b); });
    } else {
      if (!cache.inversion || cache.inversion->lambda() != lambda)
        cache.inversion = std::make_unique<const poisson_inversion>(lambda);
      each_chunk([&](std::size_t b, std::size_t end) { cache.inversion->map(out + b, end - b); });
    }
    return status::success;
  }
  float* z = reinterpret_cast<float*>(out);
  if (const status s = e.generate_poisson_normals(z, n, threads); s != status::success) return s;
  if (std::isnan(lambda)) {
    std::fill(out, out + n, poisson_nan_count(type));
    return status::success;
  }
  if (method == poisson_method::normal) {
    each_chunk([&](std::size_t b, std::size_t end) {
      poisson_from_normals(z + b, out + b, end - b, lambda);
    });
    return status::success;
  }
  each_chunk([&](std::size_t b, std::size_t end) {
    for (std::size_t i = b; i < end; ++i) {
      float zi;
      std::memcpy(&zi, z + i, 4);  // `out` aliases `z`
      const std::uint32_t k = poisson_from_normal_float(zi, lambda);
      std::memcpy(out + i, &k, 4);
    }
  });
  return status::success;
}

}  // namespace detail
}  // namespace keel::random
