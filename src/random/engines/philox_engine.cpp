// Philox4x32-10 engine. libcurand's host layout, as measured: position p is lane p % 4 of
// group q = p / 4, which belongs to "thread" t = q mod 65536 at iteration j = q / 65536 and
// reads block j + E_t of thread t's stream (counter {block, t}). E_t, a per-thread block
// shift, is 0 until double-precision calls: a group of four doubles reads two blocks
// (j + E_t and j + E_t + 1), and each group whose last lane a double call produces adds 1
// to E_t, for the doubles and 32-bit outputs that follow. set_offset resets E to 0. Every
// output is thus a pure function of (seed, position, E), so any split of calls and any
// worker count give the same bits.
// A new seed or ordering (not the current one again) restarts the generator, as libcurand
// does: E is reset and the position becomes the restart point R, which set_offset sets to
// the offset and each call of n outputs from position p advances by floor((p + n) / 4) -
// floor(p / 4) — libcurand counts groups there, so after output R lags the position.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu_kernels/glibc_math.hpp"
#include "cpu_kernels/simd.hpp"
#include "engines.hpp"
#include "engines/box_muller_double.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/philox.hpp"

namespace keel::random::detail {
namespace {

constexpr std::uint64_t k_threads = 65536;

// The four words of group q (shift: E per thread, or null for all zero).
philox_ctr group_words(std::uint64_t q, philox_key key, const std::uint32_t* shift) {
  const std::uint64_t t = q % k_threads;
  return philox4x32_10(philox_ctr_of(q / k_threads + (shift ? shift[t] : 0u), t), key);
}

// Scalar reference path over positions [p0, p0 + n).
template <class Emit>
void for_positions(std::uint64_t p0, std::size_t n, philox_key key, const std::uint32_t* shift,
                   Emit&& emit) {
  std::size_t i = 0;
  while (i < n) {
    const std::uint64_t p = p0 + i;
    const philox_ctr w = group_words(p / 4, key, shift);
    for (unsigned lane = static_cast<unsigned>(p % 4); lane < 4 && i < n; ++lane, ++i)
      emit(i, lane, w);
  }
}

class philox_engine final : public engine {
 public:
  philox_engine() : engine(ordering::pseudo_default) {}

  status generate(const request& r) override {
    switch (r.what) {
      case kind::uniform_double:
      case kind::normal_double:
      case kind::log_normal_double: return generate_double(r);
      default: break;
    }
    const philox_key key = philox_key_from_seed(seed_);
    const std::uint64_t p0 = position_;
    const unsigned workers = workers_for(r.n, r.threads);
    // Split on 64-output boundaries so each part starts aligned to a Box-Muller pair.
    const std::size_t chunks = (r.n + 63) / 64;
    parallel_for(chunks, workers, [&](std::size_t cb, std::size_t ce) {
      const std::size_t begin = cb * 64, end = std::min(r.n, ce * 64);
      fill(r, p0 + begin, begin, end - begin, key, extra_.empty() ? nullptr : extra_.data());
    });
    advance(r.n);
    return status::success;
  }

 private:
  void advance(std::size_t n) {
    restart_ += (position_ + n) / 4 - position_ / 4;
    position_ += n;
  }
  void restart() {
    position_ = restart_;
    extra_.clear();
  }

  static void fill(const request& r, std::uint64_t p, std::size_t at, std::size_t n, philox_key key,
                   const std::uint32_t* shift) {
    switch (r.what) {
      case kind::u32:
        simd::philox_u32(static_cast<std::uint32_t*>(r.out) + at, p, n, key, shift);
        return;
      case kind::uniform:
        simd::philox_uniform(static_cast<float*>(r.out) + at, p, n, key, shift);
        return;
      case kind::normal:
        simd::philox_normal(static_cast<float*>(r.out) + at, p, n, key, static_cast<float>(r.mean),
                            static_cast<float>(r.stddev), shift);
        return;
      case kind::log_normal: {
        float* out = static_cast<float*>(r.out) + at;
        const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
        for_positions(p, n, key, shift, [&](std::size_t i, unsigned lane, const philox_ctr& w) {
          const unsigned base = lane & 2u;
          const float_pair z = box_muller<glibc_math>(w.v[base], w.v[base + 1]);
          out[i] = ::expf(mean + sd * ((lane & 1u) ? z.y : z.x));
        });
        return;
      }
      default: return;
    }
  }

  // Doubles: the group's four doubles read blocks B = j + E_t and B + 1 of thread t, where
  // E_t counts the double groups thread t completed before (see the top of this file).
  // Lane l of uniform doubles uses words 2l, 2l+1 of those eight; normals pair lanes (0,1)
  // on block B's four words and (2,3) on block B + 1's.
  status generate_double(const request& r) {
    if (r.n == 0) return status::success;
    if (extra_.empty()) extra_.assign(k_threads, 0);
    const philox_key key = philox_key_from_seed(seed_);
    const std::uint64_t p0 = position_, end = position_ + r.n;
    const std::uint64_t q_first = p0 / 4, q_last = (end - 1) / 4;
    // The iteration of thread t's first group in this call.
    auto first_iteration = [&](std::uint64_t t) {
      return (q_first + ((t + k_threads - q_first % k_threads) % k_threads)) / k_threads;
    };
    const std::size_t groups = static_cast<std::size_t>(q_last - q_first + 1);
    const unsigned workers = workers_for(r.n, r.threads);
    parallel_for(groups, workers, [&](std::size_t gb, std::size_t ge) {
      // Batches of groups within one iteration j: their blocks B = j + shift[t] (shift[t] =
      // E_t + the groups of thread t this call completed before) and B + 1, which are the
      // 32-bit outputs at the batch's positions and one iteration later under that shift
      // (the SIMD Philox); then the four doubles of each group (the normals' pairs by
      // box_muller_doubles, vectorized) and what [p0, end) takes of them.
      constexpr std::size_t k_batch = 128;
      std::uint32_t wa[4 * k_batch], wb[4 * k_batch], w[8 * k_batch];
      double z[4 * k_batch];
      const std::unique_ptr<std::uint32_t[]> shift(new std::uint32_t[k_threads]);
      std::size_t count = 0;
      for (std::size_t g0 = gb; g0 < ge; g0 += count) {
        const std::uint64_t qa = q_first + g0, j = qa / k_threads;
        count = static_cast<std::size_t>(
            std::min<std::uint64_t>({k_batch, ge - g0, (j + 1) * k_threads - qa}));
        for (std::size_t g = 0; g < count; ++g) {
          const std::uint64_t t = (qa + g) % k_threads;
          shift[t] = static_cast<std::uint32_t>(extra_[t] + (j - first_iteration(t)));
        }
        simd::philox_u32(wa, 4 * qa, 4 * count, key, shift.get());
        simd::philox_u32(wb, 4 * (qa + k_threads), 4 * count, key, shift.get());
        for (std::size_t g = 0; g < count; ++g) {
          std::memcpy(w + 8 * g, wa + 4 * g, 4 * sizeof *w);
          std::memcpy(w + 8 * g + 4, wb + 4 * g, 4 * sizeof *w);
        }
        if (r.what == kind::uniform_double)
          for (std::size_t i = 0; i < 4 * count; ++i) z[i] = uniform_double(w[2 * i], w[2 * i + 1]);
        else
          box_muller_doubles(w, 2 * count, z);
        const std::uint64_t first = 4 * (q_first + g0);
        const std::uint64_t lo = std::max(p0, first), hi = std::min(end, first + 4 * count);
        double* out = static_cast<double*>(r.out) + (lo - p0);
        const double* v = z + (lo - first);
        for (std::uint64_t p = lo; p < hi; ++p, ++v, ++out)
          *out = r.what == kind::uniform_double ? *v : double_normal_output(r, *v);
      }
    });
    // Groups whose last lane was produced: q_first .. (end - 4) / 4 when end >= 4. Thread t's
    // first of them is the one among the k_threads groups from q_first with t = q mod k_threads
    // (only those threads changed: a small call does not visit all k_threads).
    if (end >= 4 && (end - 4) / 4 >= q_first) {
      const std::uint64_t q_done = (end - 4) / 4;
      for (std::uint64_t qf = q_first; qf <= q_done && qf < q_first + k_threads; ++qf)
        extra_[qf % k_threads] += static_cast<std::uint32_t>((q_done - qf) / k_threads + 1);
    }
    advance(r.n);
    return status::success;
  }

  // All three accepted orderings are the same layout, but a change restarts (see the top).
  bool accepts(ordering o) const override {
    return o == ordering::pseudo_best || o == ordering::pseudo_default ||
           o == ordering::pseudo_legacy;
  }
  void ordering_changed() override { restart(); }
  void seed_changed() override { restart(); }
  void offset_changed() override {
    restart_ = offset_;
    extra_.clear();
  }

  std::uint64_t restart_ = 0;  // R (see the top of this file)

  // E_t per thread (empty = all 0). 32 bits: 2^32 double groups per thread (2^50 doubles
  // in all) would be needed to overflow it.
  std::vector<std::uint32_t> extra_;
};

}  // namespace

std::unique_ptr<engine> make_philox_engine() { return std::make_unique<philox_engine>(); }

namespace simd::scalar {
void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key,
                const std::uint32_t* shift) {
  for_positions(p, n, key, shift,
                [&](std::size_t i, unsigned lane, const philox_ctr& w) { out[i] = w.v[lane]; });
}
void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key,
                    const std::uint32_t* shift) {
  for_positions(p, n, key, shift, [&](std::size_t i, unsigned lane, const philox_ctr& w) {
    out[i] = uniform_float(w.v[lane]);
  });
}
void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, float sd,
                   const std::uint32_t* shift) {
  for_positions(p, n, key, shift, [&](std::size_t i, unsigned lane, const philox_ctr& w) {
    const unsigned base = lane & 2u;
    const float_pair z = box_muller<glibc_math>(w.v[base], w.v[base + 1]);
    const float v = (lane & 1u) ? z.y : z.x;
    out[i] = v * sd + mean;
  });
}
}  // namespace simd::scalar

}  // namespace keel::random::detail
