// The MTGP32 engine, as libcurand's host generator lays its output out (derived by probing
// libcurand 10.4): B blocks (192 for DEFAULT and BEST, 64 for LEGACY), block b running
// parameter set b seeded with mtgp32_block_seed(seed, b). Word n of the output stream is lane
// n mod 256 of round floor(n / (256 B)) of block floor(n / 256) mod B. Every output value
// consumes one word, whatever the distribution (normals are inverse-CDF, not Box-Muller), so
// split calls equal one call, for any counts, odd ones included. There is no offset
// (set_offset answers TYPE_ERROR and changes nothing, as libcurand's); a seed or ordering different
// from the current one restarts the stream at its first word.
//
// Each block keeps its state after the rounds it has computed (as a linear array, so that the
// round vectorizes: mtgp32_simd.hpp) and the words of its latest round; a call computes every
// block's rounds independently (in parallel over blocks), so the output does not depend on
// the number of workers or the SIMD level.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_kernels/mtgp32_simd.hpp"
#include "cpu_kernels/simd.hpp"
#include "engines.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/mtgp32.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "normal_icdf.hpp"

namespace keel::random::detail {
namespace {

constexpr std::size_t k_round = k_mtgp32_threads;

void linear_round_scalar(std::uint32_t* x, const mtgp32_params& p, std::uint32_t* out) {
  for (int t = 0; t < k_mtgp32_threads; ++t) {
    const std::uint32_t r = mtgp32_recursion(p, x[t], x[t + 1], x[t + p.pos]);
    x[t + k_mtgp32_n] = r;
    out[t] = mtgp32_temper(p, r, x[t + p.pos - 1]);
  }
}

void uniform_floats_scalar(const std::uint32_t* w, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = uniform_float(w[i]);
}
void uniform_doubles_32_scalar(const std::uint32_t* w, std::size_t n, double* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = uniform_double_32(w[i]);
}

// The kernels of one SIMD level.
struct kernels {
  mtgp32_round_fn round;
  void (*uniform)(const std::uint32_t*, std::size_t, float*);
  void (*uniform_double)(const std::uint32_t*, std::size_t, double*);
};

kernels kernels_for(simd::level l) {
  namespace a2 = simd::avx2;
  namespace a5 = simd::avx512;
  return simd::by_level(
      l, kernels{linear_round_scalar, uniform_floats_scalar, uniform_doubles_32_scalar},
      kernels{a2::mtgp32_linear_round, a2::uniform_floats, a2::uniform_doubles_32},
      kernels{a5::mtgp32_linear_round, a5::uniform_floats, a5::uniform_doubles_32});
}

struct block {
  std::uint32_t x[k_mtgp32_linear];  // the last N words, then room for a round (mtgp32_simd.hpp)
  std::uint32_t last[k_round];       // the words of round rounds - 1 if a call ended inside it
  std::uint64_t rounds = 0;          // rounds computed

  void round(mtgp32_round_fn fn, const mtgp32_params& p, std::uint32_t* out) {
    fn(x, p, out);
    std::memmove(x, x + k_round, k_mtgp32_n * sizeof(std::uint32_t));
  }
};

// cuRAND's conversions of the words w[0..count) to out[at..at+count), count <= 256.
void emit(const request& r, const kernels& k, const std::uint32_t* w, std::size_t count,
          std::size_t at) {
  const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
  switch (r.what) {
    case kind::u32:
      std::memcpy(static_cast<std::uint32_t*>(r.out) + at, w, count * sizeof(std::uint32_t));
      return;
    case kind::uniform: k.uniform(w, count, static_cast<float*>(r.out) + at); return;
    case kind::uniform_double: k.uniform_double(w, count, static_cast<double*>(r.out) + at); return;
    case kind::normal: {
      float* o = static_cast<float*>(r.out) + at;
      normal_icdf_floats(w, count, o);
      for (std::size_t i = 0; i < count; ++i) o[i] = o[i] * sd + mean;
      return;
    }
    case kind::normal_double: {
      // libcurand widens the float normal; it does not compute a double one.
      float z[k_round];
      normal_icdf_floats(w, count, z);
      double* o = static_cast<double*>(r.out) + at;
      for (std::size_t i = 0; i < count; ++i) o[i] = static_cast<double>(z[i]) * r.stddev + r.mean;
      return;
    }
    case kind::log_normal: {
      float* o = static_cast<float*>(r.out) + at;
      normal_icdf_floats(w, count, o);
      for (std::size_t i = 0; i < count; ++i) o[i] = ::expf(mean + sd * o[i]);
      return;
    }
    case kind::log_normal_double: {
      // Unlike the normal double, the double inverse-CDF normal (as measured).
      double* o = static_cast<double*>(r.out) + at;
      normal_icdf_doubles(w, count, o);
      for (std::size_t i = 0; i < count; ++i) o[i] = ::exp(r.mean + r.stddev * o[i]);
      return;
    }
  }
}

class mtgp32_engine final : public engine {
 public:
  explicit mtgp32_engine(std::shared_ptr<const mtgp32_tables> tables)
      : engine(ordering::pseudo_default), tables_(std::move(tables)) {}

  status generate(const request& r) override {
    if (r.n == 0) return status::success;
    if (blocks_.empty()) start();
    const std::uint64_t b_count = blocks_.size(), stride = k_round * b_count;
    const std::uint64_t first = words_, end = words_ + r.n;
    const kernels k = kernels_for(simd::active_level());
    parallel_for(blocks_.size(), workers_for(r.n, r.threads), [&](std::size_t bb, std::size_t be) {
      std::uint32_t buf[k_round];
      for (std::size_t b = bb; b < be; ++b) {
        block& blk = blocks_[b];
        const mtgp32_params& p = tables_->sets[b];
        // The rest of the latest round, when it started before this call and ends inside it.
        if (blk.rounds > 0) {
          const std::uint64_t s = (blk.rounds - 1) * stride + b * k_round;
          if (s + k_round > first) {
            const std::uint64_t from = first - s, to = std::min<std::uint64_t>(k_round, end - s);
            emit(r, k, blk.last + from, static_cast<std::size_t>(to - from), 0);
          }
        }
        for (std::uint64_t s = blk.rounds * stride + b * k_round; s < end;
             s = ++blk.rounds * stride + b * k_round) {
          const std::size_t at = static_cast<std::size_t>(s - first);
          const std::size_t take =
              static_cast<std::size_t>(std::min<std::uint64_t>(k_round, end - s));
          if (take == k_round && r.what == kind::u32) {
            blk.round(k.round, p, static_cast<std::uint32_t*>(r.out) + at);
            continue;
          }
          // A round cut by the end of the call is kept for the next call.
          std::uint32_t* w = take == k_round ? buf : blk.last;
          blk.round(k.round, p, w);
          emit(r, k, w, take, at);
        }
      }
    });
    words_ = end;
    return status::success;
  }

 protected:
  bool accepts(ordering o) const override {
    return o == ordering::pseudo_best || o == ordering::pseudo_default ||
           o == ordering::pseudo_legacy;
  }
  void ordering_changed() override { restart(); }
  bool takes_offsets() const override { return false; }
  void seed_changed() override {
    if (seed_ != state_seed_) {
      state_seed_ = seed_;
      restart();
    }
  }

 private:
  void restart() {
    blocks_.clear();
    words_ = 0;
  }
  void start() {
    blocks_.resize(order_ == ordering::pseudo_legacy ? 64 : 192);
    mtgp32_state st;
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      mtgp32_init(st, tables_->sets[b], mtgp32_block_seed(seed_, static_cast<unsigned>(b)));
      std::memcpy(blocks_[b].x, st.s, k_mtgp32_n * sizeof(std::uint32_t));  // offset 0: in order
    }
  }

  std::shared_ptr<const mtgp32_tables> tables_;
  std::uint64_t state_seed_ = 0;
  std::vector<block> blocks_;  // empty until the first call after a restart
  std::uint64_t words_ = 0;    // words of the stream consumed since the restart
};

}  // namespace

std::unique_ptr<engine> make_mtgp32_engine() {
  const auto& lookup = mtgp32_default_tables();
  if (!lookup.tables) return nullptr;
  return std::make_unique<mtgp32_engine>(lookup.tables);
}

}  // namespace keel::random::detail
