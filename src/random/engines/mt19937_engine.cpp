// MT19937 engine: libcurand's host layout (CURAND_RNG_PSEUDO_MT19937), as measured against it
// (docs/random.md). 8192 generators: generator g starts at the seeded state (std::mt19937's
// seeding of the seed's low 32 bits) advanced by g * 2^2048 steps. Each generator has eight
// lanes. Position p is lane t = p mod 65536 (generator t / 8, lane t mod 8) in row R = p / 65536;
// a generator's rows come 78 to a block of 624 words of its sequence (block R / 78), and lane c of
// row r reads word k_row0[c] (r = 0) or k_runs[(r - 1) / 7] + 7c + (r - 1) mod 7 of the block,
// tempered. Every output converts one word, so each is a pure function of (seed, position):
// any split of calls, any worker count and any SIMD level give the same bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_kernels/mt19937_kernels.hpp"
#include "cpu_kernels/simd.hpp"
#include "engines.hpp"
#include "keel/random/distributions.hpp"
#include "keel/random/mt19937.hpp"
#include "normal_icdf.hpp"

#define KEEL_MT19937_NS scalar
#include "cpu_kernels/mt19937_kernels.inc"
#undef KEEL_MT19937_NS

namespace keel::random::detail {
namespace {

constexpr std::size_t k_generators = 8192;
constexpr std::uint64_t k_row = 8 * k_generators;  // positions per row
constexpr std::uint64_t k_block_rows = k_mt19937_n / 8;
constexpr std::size_t k_unit = 32;  // generators per work unit (a 1 KiB segment of a row)
constexpr int k_generator_log2 = 13;

struct kernels {
  void (*regenerate)(std::uint32_t*);
  void (*jump)(std::uint32_t*, const std::uint32_t*, std::size_t, std::uint32_t*);
  void (*row)(const std::uint32_t*, std::size_t, unsigned, std::uint32_t*);
};

kernels active_kernels() {
  namespace s = simd::scalar;
  namespace a2 = simd::avx2;
  namespace a5 = simd::avx512;
  return simd::by_level(kernels{s::mt19937_regenerate, s::mt19937_jump, s::mt19937_row},
                        kernels{a2::mt19937_regenerate, a2::mt19937_jump, a2::mt19937_row},
                        kernels{a5::mt19937_regenerate, a5::mt19937_jump, a5::mt19937_row});
}

// x^(2^(2048 + k)) mod P, k < 13 (a jump of 2^k generators), as the jump kernel's windows.
const std::vector<std::uint32_t>& generator_jump(int k) {
  static const auto* windows = [] {
    auto* w = new std::vector<std::uint32_t>[k_generator_log2];
    for (int j = 0; j < k_generator_log2; ++j) {
      const mt19937_poly& q = mt19937_jumps().jump[j];
      for (int m = 0; 4 * m < k_mt19937_mexp; ++m) {
        const unsigned h = static_cast<unsigned>(q.w[m / 16] >> (4 * (m % 16))) & 15u;
        if (h == 0) continue;
        const int z = __builtin_ctz(h);
        const std::size_t window = 4 * static_cast<std::size_t>(m) + static_cast<std::size_t>(z);
        w[j].push_back(
            static_cast<std::uint32_t>(((h >> z) - 1) / 2 * simd::k_mt19937_jump_table + window));
      }
    }
    return w;
  }();
  return windows[k];
}

void convert(const request& r, const std::uint32_t* w, std::size_t n, std::size_t at) {
  switch (r.what) {
    case kind::u32:
      std::memcpy(static_cast<std::uint32_t*>(r.out) + at, w, n * sizeof(std::uint32_t));
      return;
    case kind::uniform: {
      float* o = static_cast<float*>(r.out) + at;
      for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<float>(uniform_double_32_mid(w[i]));
      return;
    }
    case kind::uniform_double: {
      double* o = static_cast<double*>(r.out) + at;
      for (std::size_t i = 0; i < n; ++i) o[i] = uniform_double_32_mid(w[i]);
      return;
    }
    default: normal_icdf_distribution(r, w, n, at); return;
  }
}

class mt19937_engine final : public engine {
 public:
  mt19937_engine() : engine(ordering::pseudo_default) {}

  status generate(const request& r) override {
    if (r.n == 0) return status::success;
    const std::uint64_t q = position_, end = q + r.n;
    const std::uint64_t r0 = q / k_row, r1 = (end - 1) / k_row;
    // Generators [0, used) have lanes in the call (all of them once it reaches a second row).
    const std::size_t used = (r1 > r0 ? k_row - 1 : (end - 1) % k_row) / 8 + 1;
    extend(used, r.threads);
    const kernels k = active_kernels();
    const std::size_t units = (used + k_unit - 1) / k_unit;
    // Workers take whole units (32 generators) for every row of the call, so each generator's
    // state belongs to one worker; a unit's outputs in a row are 256 consecutive positions.
    parallel_for(
        units, std::min<unsigned>(workers_for(r.n, r.threads), static_cast<unsigned>(units)),
        [&](std::size_t ub, std::size_t ue) {
          std::uint32_t seg[8 * k_unit];
          for (std::size_t u = ub; u < ue; ++u)
            for (std::uint64_t row = r0; row <= r1; ++row) {
              const std::uint64_t base = row * k_row;
              const std::uint64_t a = std::max(base + 8 * u * k_unit, q);
              const std::uint64_t b = std::min(base + 8 * std::min(used, (u + 1) * k_unit), end);
              if (a >= b) continue;
              const std::size_t ga = (a - base) / 8, gb = (b - 1 - base) / 8 + 1;
              const std::int64_t block = static_cast<std::int64_t>(row / k_block_rows);
              for (std::size_t g = ga; g < gb; ++g)
                for (; block_index_[g] < block; ++block_index_[g]) k.regenerate(words(g));
              k.row(words(ga), gb - ga, static_cast<unsigned>(row % k_block_rows), seg);
              convert(r, seg + (a - base - 8 * ga), b - a, a - q);
            }
        });
    position_ = end;
    return status::success;
  }

 protected:
  // DEFAULT and LEGACY are one layout; changing between them restarts the stream (libcurand).
  bool accepts(ordering o) const override {
    return o == ordering::pseudo_default || o == ordering::pseudo_legacy;
  }
  void ordering_changed() override { restart(); }
  bool takes_offsets() const override { return false; }
  void seed_changed() override {
    if (seed_ != active_seed_) {
      active_seed_ = seed_;
      restart();
    }
  }

 private:
  std::uint32_t* words(std::size_t g) { return blocks_.data() + g * k_mt19937_n; }

  void restart() {
    position_ = 0;
    ready_ = 0;
  }

  // Initial states of generators [ready_, count), each 2^2048 steps after the previous one.
  void extend(std::size_t count, unsigned threads) {
    if (count <= ready_) return;
    if (blocks_.empty()) {
      blocks_.resize(k_generators * k_mt19937_n);
      block_index_.resize(k_generators);
    }
    if (ready_ == 0) {
      const mt19937_state s = mt19937_seed(static_cast<std::uint32_t>(active_seed_));
      std::memcpy(frontier_, s.x, sizeof frontier_);
      std::memcpy(words(0), frontier_, sizeof frontier_);
      block_index_[0] = -1;
      ready_ = 1;
    }
    const std::size_t todo = count - ready_, first = ready_;
    const unsigned workers =
        todo >= 512 ? static_cast<unsigned>(std::min<std::size_t>(threads, todo / 256)) : 1;
    const kernels k = active_kernels();
    parallel_for(todo, std::max(1u, workers), [&](std::size_t b, std::size_t e) {
      std::vector<std::uint32_t> scratch(simd::k_mt19937_jump_scratch);
      std::uint32_t s[k_mt19937_n];
      std::memcpy(s, frontier_, sizeof s);
      // From generator first - 1 to first + b - 1, then one generator at a time.
      for (int j = 0; j < k_generator_log2; ++j)
        if ((b >> j) & 1u)
          k.jump(s, generator_jump(j).data(), generator_jump(j).size(), scratch.data());
      const auto& one = generator_jump(0);
      for (std::size_t i = b; i < e; ++i) {
        k.jump(s, one.data(), one.size(), scratch.data());
        std::memcpy(words(first + i), s, sizeof s);
        block_index_[first + i] = -1;
      }
    });
    std::memcpy(frontier_, words(count - 1), sizeof frontier_);
    ready_ = count;
  }

  std::uint64_t active_seed_ = 0;
  std::size_t ready_ = 0;                     // generators [0, ready_) have a state
  std::vector<std::uint32_t> blocks_;         // generator g's current block at words(g)
  std::vector<std::int64_t> block_index_;     // which block that is (-1: the initial state)
  std::uint32_t frontier_[k_mt19937_n] = {};  // initial state of generator ready_ - 1
};

}  // namespace

std::unique_ptr<engine> make_mt19937_engine() { return std::make_unique<mt19937_engine>(); }

}  // namespace keel::random::detail
