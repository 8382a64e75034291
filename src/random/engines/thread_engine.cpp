// XORWOW and MRG32k3a engines. cuRAND's host generator runs T "threads" (T = 4096 for XORWOW,
// 81920 for MRG32k3a BEST/DEFAULT, 4096 for LEGACY); thread t starts at subsequence t of
// the seed's stream. The running position q counts "slots": output slot s belongs to
// thread s mod T and consumes that thread's w consecutive words starting at element
// w * floor(s / T), where w is 1 for 32-bit and uniform outputs, 2 for a Box-Muller pair
// (two outputs per slot) and so on (see slot_shape). Each call is therefore a pure function
// of (seed, q, kind, n), apart from Poisson's normals, which also depend on the value each
// thread keeps between them (generate_poisson_normals); the engine caches each thread's
// state where the last call left it so that consecutive calls step instead of jumping. As in
// libcurand, a new seed or ordering re-initializes the threads at position q counted in
// slots (one word per slot, whatever the calls before consumed), while the same seed or
// ordering again keeps the states as they are. XORWOW's SEEDED ordering (libcurand's,
// measured) gives thread t the unskipped stream of seed + t * 3133713 instead of subsequence
// t of the seed's stream; the slots are the same.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "cpu_kernels/glibc_math.hpp"
#include "cpu_kernels/simd.hpp"
#include "engines.hpp"
#include "engines/box_muller_double.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/mrg32k3a.hpp"
#include "keel/random/xorwow.hpp"

namespace keel::random::detail {
namespace {

struct slot_shape {
  unsigned words;    // words of the thread's stream per slot
  unsigned outputs;  // outputs written per slot
};

// Seed distance of consecutive threads in libcurand's SEEDED XORWOW ordering.
constexpr std::uint64_t k_xorwow_seeded_stride = 3133713;

struct xorwow_core {
  using state = xorwow_state;
  static std::uint32_t next(state& s) { return xorwow_next(s); }
  static bool accepts(ordering o) {
    return o == ordering::pseudo_best || o == ordering::pseudo_default ||
           o == ordering::pseudo_legacy || o == ordering::pseudo_seeded;
  }
  static unsigned thread_count(ordering) { return 4096; }
  static void base_states(std::uint64_t seed, ordering o, std::vector<state>& base) {
    if (o == ordering::pseudo_seeded) {
      for (std::size_t t = 0; t < base.size(); ++t)
        base[t] = xorwow_seed(seed + t * k_xorwow_seeded_stride);
      return;
    }
    state s = xorwow_seed(seed);
    const auto& jump = xorwow_jumps().jump[k_xorwow_subsequence_log2];
    for (auto& b : base) {
      b = s;
      detail::xorwow_apply(s, jump);
    }
  }
  static void skip(state& s, std::uint64_t n) {
    if (n <= 16)
      for (; n > 0; --n) xorwow_next(s);
    else
      xorwow_skipahead(s, n);
  }
  static void rows(state* st, std::size_t rows, simd::row_kind k, void* out, std::size_t stride,
                   float mean, float sd) {
    simd::xorwow_rows(st, rows, k, out, stride, mean, sd);
  }
  // Double normals are box_muller_double of four words (double_rows vectorizes them).
  static constexpr bool k_box_muller_double = true;
  // The Box-Muller pair of words (w0, w1): {sin, cos} times the radius.
  static float_pair normal_pair(std::uint32_t w0, std::uint32_t w1) {
    return box_muller<glibc_math>(w0, w1);
  }
  static slot_shape shape(kind k) {
    switch (k) {
      case kind::u32:
      case kind::uniform: return {1, 1};
      case kind::uniform_double: return {2, 1};
      case kind::normal:
      case kind::log_normal: return {2, 2};
      case kind::normal_double:
      case kind::log_normal_double: return {4, 2};
    }
    return {1, 1};
  }
  static void emit(const request& r, std::size_t i, const std::uint32_t* w) {
    const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
    switch (r.what) {
      case kind::u32: static_cast<std::uint32_t*>(r.out)[i] = w[0]; return;
      case kind::uniform: static_cast<float*>(r.out)[i] = uniform_float(w[0]); return;
      case kind::uniform_double:
        static_cast<double*>(r.out)[i] = uniform_double(w[0], w[1]);
        return;
      case kind::normal: {
        const float_pair z = box_muller<glibc_math>(w[0], w[1]);
        float* o = static_cast<float*>(r.out) + 2 * i;
        o[0] = z.x * sd + mean;
        o[1] = z.y * sd + mean;
        return;
      }
      case kind::log_normal: {
        const float_pair z = box_muller<glibc_math>(w[0], w[1]);
        float* o = static_cast<float*>(r.out) + 2 * i;
        o[0] = ::expf(mean + sd * z.x);
        o[1] = ::expf(mean + sd * z.y);
        return;
      }
      case kind::normal_double:
      case kind::log_normal_double: {
        const double_pair z = box_muller_double<glibc_math>(w[0], w[1], w[2], w[3]);
        double* o = static_cast<double*>(r.out) + 2 * i;
        o[0] = double_normal_output(r, z.x);
        o[1] = double_normal_output(r, z.y);
        return;
      }
    }
  }
};

struct mrg_core {
  using state = mrg32k3a_state;
  static std::uint32_t next(state& s) { return mrg32k3a_next(s); }
  static bool accepts(ordering o) {
    return o == ordering::pseudo_best || o == ordering::pseudo_default ||
           o == ordering::pseudo_legacy;
  }
  static unsigned thread_count(ordering o) { return o == ordering::pseudo_legacy ? 4096 : 81920; }
  static void base_states(std::uint64_t seed, ordering, std::vector<state>& base) {
    state s = mrg32k3a_seed(seed);
    const mrg_matrix j1 = k_mrg_a1.pow2_times(k_mrg_subsequence_log2, 1);
    const mrg_matrix j2 = k_mrg_a2.pow2_times(k_mrg_subsequence_log2, 1);
    for (auto& b : base) {
      b = s;
      j1.apply(s.s1);
      j2.apply(s.s2);
    }
  }
  static void skip(state& s, std::uint64_t n) { mrg32k3a_skipahead(s, n); }
  static void rows(state* st, std::size_t rows, simd::row_kind k, void* out, std::size_t stride,
                   float mean, float sd) {
    simd::mrg32k3a_rows(st, rows, k, out, stride, mean, sd);
  }
  // Double normals take two words (emit).
  static constexpr bool k_box_muller_double = false;
  static float_pair normal_pair(std::uint32_t w0, std::uint32_t w1) {
    const float x = mrg32k3a_uniform(w0);
    const float y = mrg32k3a_uniform(w1) * 6.2831855f;
    const float s = ::sqrtf(-2.0f * ::logf(x));
    float sv, cv;
    ::sincosf(y, &sv, &cv);
    return {sv * s, cv * s};
  }
  static slot_shape shape(kind k) {
    switch (k) {
      case kind::normal:
      case kind::log_normal:
      case kind::normal_double:
      case kind::log_normal_double: return {2, 2};
      default: return {1, 1};
    }
  }
  static void emit(const request& r, std::size_t i, const std::uint32_t* w) {
    const float mean = static_cast<float>(r.mean), sd = static_cast<float>(r.stddev);
    switch (r.what) {
      case kind::u32: static_cast<std::uint32_t*>(r.out)[i] = mrg32k3a_bits(w[0]); return;
      case kind::uniform: static_cast<float*>(r.out)[i] = mrg32k3a_uniform(w[0]); return;
      case kind::uniform_double:
        static_cast<double*>(r.out)[i] = mrg32k3a_uniform_double(w[0]);
        return;
      case kind::normal:
      case kind::log_normal: {
        const auto [sv, cv] = normal_pair(w[0], w[1]);
        float* o = static_cast<float*>(r.out) + 2 * i;
        if (r.what == kind::normal) {
          o[0] = sv * sd + mean;
          o[1] = cv * sd + mean;
        } else {
          o[0] = ::expf(mean + sd * sv);
          o[1] = ::expf(mean + sd * cv);
        }
        return;
      }
      case kind::normal_double:
      case kind::log_normal_double: {
        const double x = mrg32k3a_uniform_double(w[0]);
        const double y = mrg32k3a_uniform_double(w[1]) * 2.0;
        const double s = ::sqrt(-2.0 * ::log(x));
        const double sv = ::sin(y * k_pi_double) * s, cv = ::cos(y * k_pi_double) * s;
        double* o = static_cast<double*>(r.out) + 2 * i;
        if (r.what == kind::normal_double) {
          o[0] = sv * r.stddev + r.mean;
          o[1] = cv * r.stddev + r.mean;
        } else {
          o[0] = ::exp(r.mean + r.stddev * sv);
          o[1] = ::exp(r.mean + r.stddev * cv);
        }
        return;
      }
    }
  }
};

template <class Core>
class thread_engine final : public engine {
 public:
  thread_engine() : engine(ordering::pseudo_default) {}

  status generate(const request& r) override {
    const slot_shape shape = Core::shape(r.what);
    if (r.n % shape.outputs != 0) return status::length_not_multiple;
    const std::size_t slots = r.n / shape.outputs;
    if (slots == 0) return status::success;
    prepare();
    const std::uint64_t q = position_;
    const unsigned t_count = static_cast<unsigned>(base_.size());
    const unsigned workers = workers_for(r.n, r.threads);
    // Double normals of box_muller_double go by rows too (double_rows), at every level.
    const bool doubles = Core::k_box_muller_double &&
                         (r.what == kind::normal_double || r.what == kind::log_normal_double);
    const bool vector =
        doubles || (simd::has_row_kernels() &&
                    (r.what == kind::u32 || r.what == kind::uniform || r.what == kind::normal));
    const simd::row_kind rk = r.what == kind::u32       ? simd::row_kind::u32
                              : r.what == kind::uniform ? simd::row_kind::uniform
                                                        : simd::row_kind::normal;
    const std::uint64_t wrap = q % t_count;
    // Slots of thread t from slot s on, one thread at a time.
    auto run_thread = [&](std::size_t t, std::uint64_t s) {
      std::uint32_t w[4];
      typename Core::state st = cache_[t];
      for (; s < q + slots; s += t_count) {
        for (unsigned k = 0; k < shape.words; ++k) w[k] = Core::next(st);
        Core::emit(r, static_cast<std::size_t>(s - q), w);
      }
      cache_[t] = st;
    };
    auto first_slot = [&](std::size_t t) { return q + (t + t_count - wrap) % t_count; };
    constexpr std::size_t k_lanes = simd::k_row_lanes;
    // Workers take whole lane blocks, so the split never changes which path a thread takes.
    // A block is vectorized when its first slots are consecutive (the wrap point of the
    // position is not inside it): lane i's slot j is then o0 + i + j * T.
    auto vectorized = [&](std::size_t t0) { return vector && !(wrap > t0 && wrap < t0 + k_lanes); };
    auto rows_of = [&](std::size_t t0) -> std::uint64_t {
      const std::uint64_t o0 = first_slot(t0) - q;
      return o0 + k_lanes <= slots ? (slots - o0 - k_lanes) / t_count + 1 : 0;
    };
    parallel_for(t_count / k_lanes, workers, [&](std::size_t bb, std::size_t be) {
      // The vectorized blocks advance together, k_tile_rows rows at a time: a block's rows
      // are T slots apart, so one block running all its rows alone would write one cache line
      // per page or so, and every block would sweep the whole output (TLB misses bound that).
      constexpr std::uint64_t k_tile_rows = 32;
      std::uint64_t most = 0;
      for (std::size_t t0 = bb * k_lanes; t0 < be * k_lanes; t0 += k_lanes)
        if (vectorized(t0)) most = std::max(most, rows_of(t0));
      for (std::uint64_t r0 = 0; r0 < most; r0 += k_tile_rows)
        for (std::size_t t0 = bb * k_lanes; t0 < be * k_lanes; t0 += k_lanes) {
          if (!vectorized(t0)) continue;
          const std::uint64_t rows = rows_of(t0);
          if (r0 >= rows) continue;
          const std::uint64_t o0 = first_slot(t0) - q + r0 * t_count;
          const auto m = static_cast<std::size_t>(std::min(k_tile_rows, rows - r0));
          if constexpr (Core::k_box_muller_double)
            if (doubles) {
              double_rows(&cache_[t0], m, static_cast<double*>(r.out) + o0 * 2, t_count, r);
              continue;
            }
          Core::rows(&cache_[t0], m, rk, static_cast<char*>(r.out) + o0 * shape.outputs * 4,
                     t_count, static_cast<float>(r.mean), static_cast<float>(r.stddev));
        }
      for (std::size_t t0 = bb * k_lanes; t0 < be * k_lanes; t0 += k_lanes) {
        if (!vectorized(t0)) {
          for (std::size_t t = t0; t < t0 + k_lanes; ++t) run_thread(t, first_slot(t));
          continue;
        }
        const std::uint64_t rows = rows_of(t0);
        for (std::size_t i = 0; i < k_lanes; ++i)
          run_thread(t0 + i, first_slot(t0) + i + rows * t_count);
      }
    });
    position_ += slots;
    return status::success;
  }

  // libcurand's Poisson normals are cuRAND's device-style curand_normal() per thread: slot
  // s still belongs to thread s mod T, and each thread alternates between drawing a
  // Box-Muller pair from its next two words (returning sin) and returning the pair's cos
  // that it kept. The kept value survives other calls (raw, uniform, normal, Poisson by
  // table) and is dropped by set_seed, set_offset and set_ordering.
  status generate_poisson_normals(float* out, std::size_t n, unsigned threads) override {
    if (n == 0) return status::success;
    prepare();
    const std::uint64_t q = position_;
    const std::uint64_t t_count = base_.size(), wrap = q % t_count;
    if (kept_.size() != t_count) kept_.assign(t_count, std::nullopt);
    constexpr std::size_t k_lanes = simd::k_row_lanes, k_chunk_rows = 64;
    parallel_for(t_count / k_lanes, workers_for(n, threads), [&](std::size_t bb, std::size_t be) {
      float pairs[2 * k_lanes * k_chunk_rows];
      for (std::size_t t0 = bb * k_lanes; t0 < be * k_lanes; t0 += k_lanes) {
        std::uint64_t first[k_lanes], count[k_lanes], done[k_lanes], rows = ~std::uint64_t{0};
        for (std::size_t i = 0; i < k_lanes; ++i) {
          const std::size_t t = t0 + i;
          first[i] = (t + t_count - wrap) % t_count;
          count[i] = first[i] < n ? (n - 1 - first[i]) / t_count + 1 : 0;
          done[i] = 0;
          if (count[i] > 0 && kept_[t]) {
            out[first[i]] = *kept_[t];
            kept_[t].reset();
            done[i] = 1;
          }
          const std::uint64_t need = (count[i] - done[i] + 1) / 2;
          rows = std::min(rows, need);
        }
        // Lane i's next pair: sin to its next slot, cos to the one after or kept.
        auto put = [&](std::size_t i, float sin_z, float cos_z) {
          out[first[i] + done[i]++ * t_count] = sin_z;
          if (done[i] < count[i])
            out[first[i] + done[i]++ * t_count] = cos_z;
          else
            kept_[t0 + i] = cos_z;
        };
        if (simd::has_row_kernels())
          for (std::uint64_t r0 = 0; r0 < rows; r0 += k_chunk_rows) {
            const std::size_t m =
                static_cast<std::size_t>(std::min<std::uint64_t>(k_chunk_rows, rows - r0));
            Core::rows(&cache_[t0], m, simd::row_kind::normal, pairs, k_lanes, 0.0f, 1.0f);
            for (std::size_t j = 0; j < m; ++j) {
              const float* z = pairs + 2 * k_lanes * j;
              if (r0 + j + 1 < rows) {
                // Not the last pair of any lane: both values land in slots of this call.
                for (std::size_t i = 0; i < k_lanes; ++i) {
                  float* o = out + first[i] + done[i] * t_count;
                  o[0] = z[2 * i];
                  o[t_count] = z[2 * i + 1];
                  done[i] += 2;
                }
              } else {
                for (std::size_t i = 0; i < k_lanes; ++i) put(i, z[2 * i], z[2 * i + 1]);
              }
            }
          }
        for (std::size_t i = 0; i < k_lanes; ++i) {
          typename Core::state st = cache_[t0 + i];
          while (done[i] < count[i]) {
            const std::uint32_t w0 = Core::next(st), w1 = Core::next(st);
            const float_pair z = Core::normal_pair(w0, w1);
            put(i, z.x, z.y);
          }
          cache_[t0 + i] = st;
        }
      }
    });
    position_ += n;
    return status::success;
  }

 protected:
  bool accepts(ordering o) const override { return Core::accepts(o); }
  // As libcurand, the position is kept and the threads are re-initialized there.
  void ordering_changed() override { seed_changed(); }
  // libcurand rebuilds its thread states on set_seed and set_offset: from the position (one
  // word per slot), and kept Poisson normals are dropped.
  void seed_changed() override {
    base_.clear();
    cache_.clear();
    kept_.clear();
  }
  void offset_changed() override {
    cache_.clear();
    kept_.clear();
  }

 private:
  // The row kernel of double normals: k_row_lanes consecutive threads' states, `rows` slots
  // each (four words, two doubles), lane i's slot j to doubles 2 (i + j stride) of out; each
  // tile's pairs by box_muller_doubles (vectorized). States are advanced.
  static void double_rows(typename Core::state* st, std::size_t rows, double* out,
                          std::size_t stride, const request& r) {
    constexpr std::size_t k_lanes = simd::k_row_lanes, k_rows = 32;
    std::uint32_t raw[4 * k_lanes * k_rows], w[4 * k_lanes * k_rows];
    double z[2 * k_lanes * k_rows];
    const bool simd_words = simd::has_row_kernels();
    for (std::size_t r0 = 0; r0 < rows; r0 += k_rows) {
      const std::size_t m = std::min(k_rows, rows - r0);
      // Word k of lane i's slot j: row 4 j + k of the 32-bit row kernel (SIMD), or the state.
      if (simd_words) Core::rows(st, 4 * m, simd::row_kind::u32, raw, k_lanes, 0.0f, 1.0f);
      for (std::size_t j = 0; j < m; ++j)
        for (std::size_t i = 0; i < k_lanes; ++i)
          for (std::size_t k = 0; k < 4; ++k)
            w[4 * (k_lanes * j + i) + k] =
                simd_words ? raw[i + (4 * j + k) * k_lanes] : Core::next(st[i]);
      box_muller_doubles(w, k_lanes * m, z);
      for (std::size_t j = 0; j < m; ++j) {
        double* o = out + 2 * (r0 + j) * stride;
        for (std::size_t v = 0; v < 2 * k_lanes; ++v)
          o[v] = double_normal_output(r, z[2 * k_lanes * j + v]);
      }
    }
  }

  void prepare() {
    if (base_.empty()) {
      base_.resize(Core::thread_count(order_));
      Core::base_states(seed_, order_, base_);
      cache_.clear();
    }
    if (!cache_.empty()) return;
    // Thread t starts past one word for each of its ceil((q - t) / T) slots before q.
    const std::uint64_t t_count = base_.size();
    cache_ = base_;
    for (std::uint64_t t = 0; t < t_count && t < position_; ++t)
      Core::skip(cache_[t], (position_ - t - 1) / t_count + 1);
  }

  std::vector<typename Core::state> base_;   // thread t at element 0
  std::vector<typename Core::state> cache_;  // thread t where its next word is
  std::vector<std::optional<float>> kept_;   // thread t's kept Poisson normal (empty = none)
};

}  // namespace

std::unique_ptr<engine> make_xorwow_engine() {
  return std::make_unique<thread_engine<xorwow_core>>();
}
std::unique_ptr<engine> make_mrg32k3a_engine() {
  return std::make_unique<thread_engine<mrg_core>>();
}

}  // namespace keel::random::detail
