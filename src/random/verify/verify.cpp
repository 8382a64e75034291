#include "keel/random/verify.hpp"
#include "keel/core/enum_names.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <sstream>

#include "cpu_kernels/simd.hpp"
#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/poisson.hpp"
#include "keel/random/sobol.hpp"

namespace keel::random {

namespace {
constexpr enum_entry<distribution> k_distribution_entries[] = {
    {distribution::raw, "raw"},
    {distribution::uniform, "uniform"},
    {distribution::uniform_double, "uniform-double"},
    {distribution::normal, "normal"},
    {distribution::normal_double, "normal-double"},
    {distribution::log_normal, "log-normal"},
    {distribution::log_normal_double, "log-normal-double"},
    {distribution::poisson, "poisson"},
};
constexpr enum_names<distribution> k_distribution_names{"distribution", k_distribution_entries,
                                                        name_case::exact, "unknown"};
}  // namespace

std::string_view to_string(distribution d) noexcept { return k_distribution_names.name(d); }

distribution parse_distribution(std::string_view name) { return k_distribution_names.parse(name); }

std::size_t value_size(distribution d) noexcept {
  switch (d) {
    case distribution::uniform_double:
    case distribution::normal_double:
    case distribution::log_normal_double: return 8;
    default: return 4;
  }
}

std::size_t verify_case::count() const {
  std::size_t n = 0;
  for (auto c : calls) n += c;
  return n;
}

std::string verify_case::name() const {
  std::ostringstream s;
  s << to_string(type) << '/' << to_string(order) << '/' << to_string(dist);
  if (is_quasi(type))
    s << "/dimensions=" << dimensions;
  else
    s << "/seed=" << seed;
  s << "/offset=" << offset << "/calls=";
  for (std::size_t i = 0; i < calls.size(); ++i) s << (i ? "+" : "") << calls[i];
  switch (then.what) {
    case midstream_change::setter::none: break;
    case midstream_change::setter::seed: s << "/then-seed=" << then.value; break;
    case midstream_change::setter::offset: s << "/then-offset=" << then.value; break;
    case midstream_change::setter::ordering:
      s << "/then-ordering=" << to_string(static_cast<ordering>(then.value));
      break;
  }
  if (dist == distribution::poisson)
    s << "/lambda=" << params.lambda;
  else if (dist != distribution::raw && dist != distribution::uniform &&
           dist != distribution::uniform_double)
    s << "/mean=" << params.mean << "/sd=" << params.stddev;
  return s.str();
}

namespace {
template <class G>
run_output run_with(G& g, const verify_case& c) {
  run_output out;
  const std::size_t vs = value_size(c.dist);
  out.bytes.assign(c.count() * vs, 0);
  auto note = [&](status s) {
    if (s != status::success && out.first_error == status::success) out.first_error = s;
  };
  if (c.order != ordering::pseudo_default) note(g.set_ordering(c.order));
  if (is_quasi(c.type))
    note(g.set_dimensions(c.dimensions));
  else
    note(g.set_seed(c.seed));
  note(g.set_offset(c.offset));
  std::size_t at = 0;
  for (std::size_t i = 0; i < c.calls.size(); ++i) {
    if (i == 1) {
      switch (c.then.what) {
        case midstream_change::setter::none: break;
        case midstream_change::setter::seed: note(g.set_seed(c.then.value)); break;
        case midstream_change::setter::offset: note(g.set_offset(c.then.value)); break;
        case midstream_change::setter::ordering:
          note(g.set_ordering(static_cast<ordering>(c.then.value)));
          break;
      }
    }
    note(generate(g, c.dist, out.bytes.data() + at * vs, c.calls[i], c.params));
    at += c.calls[i];
  }
  return out;
}
}  // namespace

run_output run_keel(const verify_case& c, unsigned threads) {
  std::unique_ptr<generator> g;
  if (const status s = generator::create(c.type, g); s != status::success) return run_output{s, {}};
  g->set_threads(threads);
  return run_with(*g, c);
}

run_output run_curand(const verify_case& c) {
  std::unique_ptr<curand_generator> g;
  if (const status s = curand_reference::get().create_host_generator(c.type, g);
      s != status::success)
    return run_output{s, {}};
  return run_with(*g, c);
}

std::optional<mismatch> compare(const run_output& a, const run_output& b, std::size_t vs) {
  if (a.first_error != b.first_error || a.bytes.size() != b.bytes.size()) return mismatch{0, 1};
  std::optional<mismatch> m;
  for (std::size_t i = 0; i * vs < a.bytes.size(); ++i) {
    if (std::memcmp(a.bytes.data() + i * vs, b.bytes.data() + i * vs, vs) != 0) {
      if (!m) m = mismatch{i, 0};
      ++m->count;
    }
  }
  return m;
}

bool uses_double_icdf(rng_type type, distribution d) noexcept {
  if (d != distribution::normal_double && d != distribution::log_normal_double) return false;
  // MTGP32's normal double widens its float normal; Philox, XORWOW and MRG32k3a use Box-Muller.
  return type == rng_type::mt19937 || type == rng_type::sobol32 ||
         type == rng_type::scrambled_sobol32 ||
         (type == rng_type::mtgp32 && d == distribution::log_normal_double);
}

namespace {
// The slice: two cases per combination, rotating through seeds and offsets.
// `offsets`: how many of the 4 offsets the combination has (MT19937: 1).
bool in_slice(std::size_t rotation, std::size_t si, std::size_t oi, int split,
              std::size_t offsets = 4) {
  const std::size_t k = rotation % 20;
  return (si == k % 5 && oi == (k / 5) % 4 % offsets && split == 0) ||
         (si == (k + 2) % 5 && oi == (k + 1) % 4 % offsets && split == 1);
}
}  // namespace

std::vector<verify_case> standard_cases(std::size_t length, bool full, std::uint64_t random_seed) {
  const std::uint64_t seeds[] = {0, 42, 1234, ~std::uint64_t{0}, random_seed};
  const std::uint64_t offsets[] = {0, 1, 3, 1000003};
  const std::pair<rng_type, ordering> engines[] = {
      {rng_type::philox4_32_10, ordering::pseudo_default},
      {rng_type::philox4_32_10, ordering::pseudo_best},
      {rng_type::philox4_32_10, ordering::pseudo_legacy},
      {rng_type::xorwow, ordering::pseudo_default},
      {rng_type::xorwow, ordering::pseudo_best},
      {rng_type::xorwow, ordering::pseudo_legacy},
      {rng_type::mrg32k3a, ordering::pseudo_default},
      {rng_type::mrg32k3a, ordering::pseudo_best},
      {rng_type::mrg32k3a, ordering::pseudo_legacy},
      {rng_type::xorwow, ordering::pseudo_seeded},
      {rng_type::mt19937, ordering::pseudo_default},
      {rng_type::mt19937, ordering::pseudo_legacy},
      {rng_type::mtgp32, ordering::pseudo_default},
      {rng_type::mtgp32, ordering::pseudo_best},
      {rng_type::mtgp32, ordering::pseudo_legacy},
      {rng_type::sobol32, ordering::quasi_default},
      {rng_type::scrambled_sobol32, ordering::quasi_default},
  };
  const std::uint32_t quasi_dimensions[] = {1, 3, 64, 1000, k_sobol32_max_dimensions};
  const distribution dists[] = {distribution::raw,
                                distribution::uniform,
                                distribution::normal,
                                distribution::log_normal,
                                distribution::uniform_double,
                                distribution::normal_double,
                                distribution::log_normal_double};
  length += length % 2;  // normals of some generators need even lengths
  std::vector<verify_case> out;
  std::size_t rotation = 0;
  for (std::size_t e = 0; e < std::size(engines); ++e)
    for (distribution d : dists) {
      const auto& [type, order] = engines[e];
      // MT19937: libcurand refuses every offset (TYPE_ERROR, stream unchanged), so one offset
      // does. MTGP32 needs its parameter sets, the double inverse-CDF normals libcurand's
      // erfcinv coefficients (each skipped without them).
      const bool mt = type == rng_type::mt19937;
      if (type == rng_type::mtgp32 && !mtgp32_default_tables().tables) continue;
      if (uses_double_icdf(type, d) && !erfcinv_default_tables().tables) continue;
      for (std::size_t si = 0; si < 5; ++si)
        for (std::size_t oi = 0; oi < (mt ? 1 : 4); ++oi)
          for (int split = 0; split < 2; ++split) {
            if (!full && !in_slice(rotation, si, oi, split, mt ? 1 : 4)) continue;
            verify_case c;
            c.type = type;
            c.order = order;
            c.dist = d;
            const bool quasi = is_quasi(type);
            c.seed = quasi ? 0 : seeds[si];
            c.dimensions = quasi ? quasi_dimensions[si] : 1;
            c.offset = offsets[oi];
            if (d == distribution::normal || d == distribution::normal_double)
              c.params = {1.5, 2.0, 1.0};
            if (d == distribution::log_normal || d == distribution::log_normal_double)
              c.params = {0.25, 0.5, 1.0};
            if (quasi) {
              const std::size_t dims = c.dimensions,
                                total = std::max<std::size_t>(length / dims, 2) * dims;
              const std::size_t a = total / 4 / dims * dims;
              c.calls = split == 0 ? std::vector<std::size_t>{total}
                                   : std::vector<std::size_t>{a, dims, total - a - dims};
            } else if (split == 0) {
              c.calls = {length};
            } else {
              const std::size_t a = (length / 4) & ~std::size_t{1};
              c.calls = {a, 2, length - a - 2};
            }
            out.push_back(c);
            if (split == 0) continue;
            // Calls after output: a new seed, offset or ordering (the next one of this
            // generator in `engines`) between the first and the second call.
            std::size_t next = (e + 1) % std::size(engines);
            while (engines[next].first != type) next = (next + 1) % std::size(engines);
            const midstream_change changes[] = {{midstream_change::setter::seed, 7},
                                                {midstream_change::setter::offset, 12345},
                                                {midstream_change::setter::ordering,
                                                 static_cast<std::uint64_t>(engines[next].second)}};
            for (std::size_t k = 0; k < 3; ++k) {
              if (!full && k != rotation % 3) continue;
              c.then = changes[k];
              out.push_back(c);
            }
          }
      ++rotation;
    }
  // Poisson: each of libcurand's methods and the lambdas at which it switches (table below
  // 10 / 32 / 2000, inversion up to 8000 on MTGP32 and Sobol', normal approximation above),
  // in odd lengths, which every pseudo-random generator accepts (Sobol': multiples of the
  // dimension count).
  const double lambdas[] = {1e-6, 0.5, 3.7, 10, 32, 63.9, 1999, 2000, 8000, 8000.5, 1e5, 400000};
  for (const auto& [type, order] : engines)
    for (double lambda : lambdas) {
      if (type == rng_type::mtgp32 && !mtgp32_default_tables().tables) continue;
      const bool mt = type == rng_type::mt19937, quasi = is_quasi(type);
      for (std::size_t si = 0; si < 5; ++si)
        for (std::size_t oi = 0; oi < (mt ? 1 : 4); ++oi)
          for (int split = 0; split < 2; ++split) {
            if (!full && !in_slice(rotation, si, oi, split, mt ? 1 : 4)) continue;
            verify_case c{
                type,        order, distribution::poisson, quasi ? 0 : seeds[si],
                offsets[oi], {},    {0.0, 1.0, lambda},    quasi ? quasi_dimensions[si] : 1,
                {}};
            if (quasi) {
              const std::size_t dims = c.dimensions,
                                total = std::max<std::size_t>((length + 1) / dims, 2) * dims;
              const std::size_t a = total / 4 / dims * dims;
              c.calls = split == 0 ? std::vector<std::size_t>{total}
                                   : std::vector<std::size_t>{a, dims, total - a - dims};
            } else {
              const std::size_t a = (length / 4) & ~std::size_t{1};
              c.calls = split == 0 ? std::vector<std::size_t>{length + 1}
                                   : std::vector<std::size_t>{a + 1, 3, length - a - 3};
            }
            out.push_back(c);
          }
      ++rotation;
    }
  return out;
}

std::vector<verify_case> poisson_sweep_cases(std::size_t lambdas, std::size_t length,
                                             std::uint64_t random_seed) {
  const std::pair<rng_type, ordering> engines[] = {
      {rng_type::philox4_32_10, ordering::pseudo_default},
      {rng_type::xorwow, ordering::pseudo_default},
      {rng_type::xorwow, ordering::pseudo_legacy},
      {rng_type::mrg32k3a, ordering::pseudo_default},
      {rng_type::mrg32k3a, ordering::pseudo_legacy},
      {rng_type::mt19937, ordering::pseudo_default},
      {rng_type::mtgp32, ordering::pseudo_default},
      {rng_type::mtgp32, ordering::pseudo_legacy},
      {rng_type::sobol32, ordering::quasi_default},
      {rng_type::scrambled_sobol32, ordering::quasi_default},
  };
  std::mt19937_64 rng(random_seed);
  std::uniform_real_distribution<double> log_lambda(std::log(1e-8), std::log(k_poisson_max_lambda));
  std::vector<verify_case> out;
  for (const auto& [type, order] : engines) {
    if (type == rng_type::mtgp32 && !mtgp32_default_tables().tables) continue;
    for (std::size_t i = 0; i < lambdas; ++i) {
      const double lambda = std::min(k_poisson_max_lambda, std::exp(log_lambda(rng)));
      const std::uint64_t seed = rng(), offset = rng() % 1000003;
      // No offset on MT19937 and MTGP32 (libcurand refuses them), no seed on Sobol'.
      const bool offsets = type != rng_type::mt19937 && type != rng_type::mtgp32;
      out.push_back(verify_case{type,
                                order,
                                distribution::poisson,
                                is_quasi(type) ? 0 : seed,
                                offsets ? offset : 0,
                                {length},
                                {0.0, 1.0, lambda},
                                1,
                                {}});
    }
  }
  return out;
}

std::string golden_line(const verify_case& c, const run_output& out) {
  std::ostringstream s;
  s << c.name() << ' ' << c.count() << ' ' << static_cast<int>(out.first_error) << ' ' << std::hex
    << fnv1a64(out.bytes.data(), out.bytes.size());
  const std::size_t vs = value_size(c.dist);
  // Scrambled Sobol's first values would spell out NVIDIA's scramble tables: only the hash.
  const std::size_t shown = c.type == rng_type::scrambled_sobol32 ? 0 : 4;
  for (std::size_t i = 0; i < shown && (i + 1) * vs <= out.bytes.size(); ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, out.bytes.data() + i * vs, vs);
    s << ' ' << v;
  }
  return s.str();
}

namespace {
// Runs `check(in, n)` over the floats with bits [lo, hi], 16 (one vector) at a time.
template <class Check>
void over_floats(std::uint32_t lo, std::uint32_t hi, std::uint32_t stride, Check&& check) {
  float in[16];
  std::size_t n = 0;
  for (std::uint64_t b = lo; b <= hi; b += stride) {
    const auto bits = static_cast<std::uint32_t>(b);
    std::memcpy(&in[n++], &bits, 4);
    if (n == 16 || b + stride > hi) {
      for (std::size_t i = n; i < 16; ++i) in[i] = in[0];
      check(in, n);
      n = 0;
    }
  }
}
}  // namespace

std::vector<math_check> check_vector_math(std::uint32_t stride) {
  namespace simd = detail::simd;
  if (stride == 0) throw invalid_argument("check_vector_math: stride must be positive");
  std::vector<math_check> out;
  const simd::level saved = simd::active_level();
  for (const auto l : {simd::level::avx2, simd::level::avx512}) {
    simd::force_level(l);
    if (simd::active_level() != l) continue;
    math_check m;
    m.level = simd_level();
    auto note = [&](const float& x) {
      if (m.logf_mismatches + m.sincosf_mismatches == 0) std::memcpy(&m.first_mismatch_bits, &x, 4);
    };
    // logf: u = x * 2^-32 + 2^-33 in (2^-33, 1] (MRG32k3a's uniforms are inside too).
    over_floats(0x2f000000u, 0x3f800000u, stride, [&](const float* in, std::size_t n) {
      float y[16];
      simd::logf16(in, y);
      for (std::size_t i = 0; i < n; ++i) {
        const float g = ::logf(in[i]);
        if (std::bit_cast<std::uint32_t>(g) == std::bit_cast<std::uint32_t>(y[i])) continue;
        note(in[i]);
        ++m.logf_mismatches;
      }
      m.logf_inputs += n;
    });
    // sincosf: the Box-Muller angle is in [2^-30.4, 2pi], MRG32k3a's in [2^-29.4, 2pi].
    over_floats(0x30000000u, 0x40c9999au, stride, [&](const float* in, std::size_t n) {
      float s[16], c[16];
      simd::sincosf16(in, s, c);
      for (std::size_t i = 0; i < n; ++i) {
        float gs, gc;
        ::sincosf(in[i], &gs, &gc);
        if (std::bit_cast<std::uint32_t>(gs) == std::bit_cast<std::uint32_t>(s[i]) &&
            std::bit_cast<std::uint32_t>(gc) == std::bit_cast<std::uint32_t>(c[i]))
          continue;
        note(in[i]);
        ++m.sincosf_mismatches;
      }
      m.sincosf_inputs += n;
    });
    out.push_back(m);
  }
  simd::force_level(saved);
  return out;
}

}  // namespace keel::random
