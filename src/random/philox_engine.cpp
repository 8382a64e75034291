// Philox4x32-10 engine: every output is a pure function of (seed, position), so calls of any
// split, any offset and any worker count give the same bits.
#include <cmath>
#include <cstring>

#include "engines.hpp"
#include "glibc_math.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/philox.hpp"
#include "simd.hpp"

namespace keel::random::detail {
namespace {

philox_ctr block_words(std::uint64_t block, philox_key key) {
  return philox4x32_10(philox_ctr_of(block >> 16, block & 0xffffu), key);
}

// Scalar reference path over positions [p0, p0 + n).
template <class Emit>
void for_positions(std::uint64_t p0, std::size_t n, philox_key key, Emit&& emit) {
  std::size_t i = 0;
  while (i < n) {
    const std::uint64_t p = p0 + i;
    const std::uint64_t b = p / 4;
    const philox_ctr w = block_words(b, key);
    for (unsigned lane = static_cast<unsigned>(p % 4); lane < 4 && i < n; ++lane, ++i) emit(i, lane, w);
  }
}

class philox_engine final : public engine {
 public:
  status set_ordering(ordering order) override {
    if (order == ordering::pseudo_best || order == ordering::pseudo_default ||
        order == ordering::pseudo_legacy || order == ordering::pseudo_dynamic) {
      position_ = offset_;
      return status::success;
    }
    return status::out_of_range;
  }

  status generate(const request& r) override {
    switch (r.what) {
      case kind::uniform_double:
      case kind::normal_double:
      case kind::log_normal_double:
        return generate_double(r);
      default:
        break;
    }
    const philox_key key = philox_key_from_seed(seed_);
    const std::uint64_t p0 = position_;
    const unsigned workers = workers_for(r.n, r.threads);
    // Split on 64-output boundaries so each part starts aligned to a Box-Muller pair.
    const std::size_t chunks = (r.n + 63) / 64;
    parallel_for(chunks, workers, [&](std::size_t cb, std::size_t ce) {
      const std::size_t begin = cb * 64, end = std::min(r.n, ce * 64);
      fill(r, p0 + begin, begin, end - begin, key);
    });
    position_ += r.n;
    return status::success;
  }

 private:
  static void fill(const request& r, std::uint64_t p, std::size_t at, std::size_t n, philox_key key) {
    switch (r.what) {
      case kind::u32:
        simd::philox_u32(static_cast<std::uint32_t*>(r.out) + at, p, n, key);
        return;
      case kind::uniform:
        simd::philox_uniform(static_cast<float*>(r.out) + at, p, n, key);
        return;
      case kind::normal:
        simd::philox_normal(static_cast<float*>(r.out) + at, p, n, key, static_cast<float>(r.mean),
                            static_cast<float>(r.stddev));
        return;
      case kind::log_normal: {
        float* out = static_cast<float*>(r.out) + at;
        const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
        for_positions(p, n, key, [&](std::size_t i, unsigned lane, const philox_ctr& w) {
          const unsigned base = lane & 2u;
          const float_pair z = box_muller<glibc_math>(w.v[base], w.v[base + 1]);
          out[i] = ::expf(mean + sd * ((lane & 1u) ? z.y : z.x));
        });
        return;
      }
      default:
        return;
    }
  }

  status generate_double(const request&) {
    // cuRAND's Philox double layout (a per-thread word cursor that depends on the history of
    // calls) is not reproduced yet; refuse rather than return different numbers.
    return status::type_error;
  }
};

}  // namespace

std::unique_ptr<engine> make_philox_engine() { return std::make_unique<philox_engine>(); }

namespace simd::scalar {
void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key) {
  for_positions(p, n, key, [&](std::size_t i, unsigned lane, const philox_ctr& w) { out[i] = w.v[lane]; });
}
void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key) {
  for_positions(p, n, key,
                [&](std::size_t i, unsigned lane, const philox_ctr& w) { out[i] = uniform_float(w.v[lane]); });
}
void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, float sd) {
  for_positions(p, n, key, [&](std::size_t i, unsigned lane, const philox_ctr& w) {
    const unsigned base = lane & 2u;
    const float_pair z = box_muller<glibc_math>(w.v[base], w.v[base + 1]);
    const float v = (lane & 1u) ? z.y : z.x;
    out[i] = v * sd + mean;
  });
}
}  // namespace simd::scalar

}  // namespace keel::random::detail
