// Sobol32 and scrambled Sobol32 engines (cuRAND's CURAND_RNG_QUASI_SOBOL32, QUASI_DEFAULT and
// CURAND_RNG_QUASI_SCRAMBLED_SOBOL32). libcurand's host layout, as measured: with D
// dimensions, a call of n values (n a multiple of D, else LENGTH_NOT_MULTIPLE and nothing
// happens) writes n / D consecutive points of dimension 1, then of dimension 2, ...; the
// point index of the first is the generator's position, which starts at the offset and
// advances by n / D per call, and is taken mod 2^32. Changing the dimension count keeps the
// position. Every output is a pure function of (dimension, index), so any split of calls and
// any worker count give the same bits.
#include <algorithm>
#include <cmath>

#include "cpu_kernels/simd.hpp"
#include "cpu_kernels/sobol_kernels.hpp"
#include "engines.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/sobol_tables.hpp"
#include "normal_icdf.hpp"

namespace keel::random::detail {
namespace {

// Points [index, index + n) of one dimension into x. Aligned blocks of 16 use
// gray(16m + k) = gray(16m) ^ gray(k): x(16m + k) = x(16m) ^ low[k].
void sobol_points(const sobol32_directions& d, std::uint32_t shift, std::uint32_t index,
                  std::size_t n, std::uint32_t* x) {
  std::size_t i = 0;
  std::uint32_t v = sobol32_point(d, index, shift);
  for (; i < n && (index & 15u) != 0; ++i, ++index) {
    x[i] = v;
    v = sobol32_next(d, index, v);
  }
  if (n - i >= 16) {
    std::uint32_t low[16];
    for (std::uint32_t k = 0; k < 16; ++k) low[k] = sobol32_point(d, k);
    for (; n - i >= 16; i += 16, index += 16) {
      for (int k = 0; k < 16; ++k) x[i + k] = v ^ low[k];
      for (std::uint32_t g = sobol_gray(index) ^ sobol_gray(index + 16); g != 0; g &= g - 1)
        v ^= d.v[std::countr_zero(g)];
    }
  }
  for (; i < n; ++i, ++index) {
    x[i] = v;
    v = sobol32_next(d, index, v);
  }
}

}  // namespace

void simd::scalar::sobol_convert(const request& r, const std::uint32_t* x, std::size_t n,
                                 std::size_t at) {
  switch (r.what) {
    case kind::u32: std::copy(x, x + n, static_cast<std::uint32_t*>(r.out) + at); return;
    case kind::uniform: {
      float* out = static_cast<float*>(r.out) + at;
      for (std::size_t i = 0; i < n; ++i) out[i] = uniform_float(x[i]);
      return;
    }
    case kind::uniform_double: {
      double* out = static_cast<double*>(r.out) + at;
      for (std::size_t i = 0; i < n; ++i) out[i] = uniform_double_32(x[i]);
      return;
    }
    default: return;  // normals: convert() below
  }
}

namespace {

// Normals: the inverse CDF (normal_icdf_distribution); the rest by SIMD level.
void convert(const request& r, const std::uint32_t* x, std::size_t n, std::size_t at) {
  if (normal_icdf_distribution(r, x, n, at)) return;
  namespace s = simd;
  s::by_level(s::scalar::sobol_convert, s::avx2::sobol_convert, s::avx512::sobol_convert)(r, x, n,
                                                                                          at);
}

class sobol_engine final : public engine {
 public:
  // shifts: the digital shift per dimension (scrambled), or null.
  sobol_engine(const sobol32_directions* directions, const std::uint32_t* shifts)
      : engine(ordering::quasi_default), directions_(directions), shifts_(shifts) {}

  status set_dimensions(std::uint32_t dimensions) override {
    if (dimensions < 1 || dimensions > k_sobol32_max_dimensions) return status::out_of_range;
    dimensions_ = dimensions;
    return status::success;
  }

  status generate(const request& r) override {
    if (r.n % dimensions_ != 0) return status::length_not_multiple;
    const std::size_t points = r.n / dimensions_;
    if (points == 0) return status::success;
    const std::uint64_t first = position_;
    // Output value k is point (k mod points) of dimension k / points; each worker takes a
    // contiguous range of k.
    parallel_for(r.n, workers_for(r.n, r.threads), [&](std::size_t begin, std::size_t end) {
      std::uint32_t x[k_sobol_batch];
      for (std::size_t k = begin; k < end;) {
        const std::size_t dim = k / points, i = k % points;
        const std::size_t n = std::min({end - k, points - i, k_sobol_batch});
        // Raw words go straight to the output.
        std::uint32_t* words = r.what == kind::u32 ? static_cast<std::uint32_t*>(r.out) + k : x;
        sobol_points(directions_[dim], shifts_ ? shifts_[dim] : 0u,
                     static_cast<std::uint32_t>(first + i), n, words);
        if (r.what != kind::u32) convert(r, x, n, k);
        k += n;
      }
    });
    position_ += points;
    return status::success;
  }

 protected:
  bool accepts(ordering o) const override { return o == ordering::quasi_default; }

 private:
  const sobol32_directions* directions_;
  const std::uint32_t* shifts_;
  std::uint32_t dimensions_ = 1;
};

}  // namespace

std::unique_ptr<engine> make_sobol32_engine() {
  return std::make_unique<sobol_engine>(sobol32_joe_kuo6(), nullptr);
}

std::unique_ptr<engine> make_scrambled_sobol32_engine() {
  const sobol32_scrambled* t = sobol32_scramble_tables();
  if (!t) return nullptr;
  return std::make_unique<sobol_engine>(t->directions.data(), t->shifts.data());
}

}  // namespace keel::random::detail
