// Where the time of a CPU normal goes: keel::random's SIMD kernels one stage at a time, at one
// SIMD level, over a cache-resident buffer (so memory does not blur the stages).
//
//   keel_random_breakdown LEVEL STAGE [N] [REPEATS]
//
// LEVEL: avx2 or avx512. STAGE:
//   none     setup only (the baseline that instruction counts subtract)
//   u32      Philox counters and their stores (philox_u32)
//   uniform  the same plus integer-to-float (philox_uniform)
//   normal   Philox Box-Muller normals (philox_normal)
//   log      the vector logf on N floats (one per Box-Muller pair: two normals)
//   sincos   the vector sincosf on N floats (one per pair)
//   icdf     inverse-CDF float normals from N words (MT19937, MTGP32, Sobol')
//   double   double Box-Muller normals from 2N words (box_muller_doubles: Philox, XORWOW)
//   double_glibc  the same by the scalar function and glibc's log, sin and cos
// Prints "LEVEL STAGE ns/value" (best of REPEATS passes over N values, default 2^16 and 200).
// Under `valgrind --tool=callgrind`, (Ir of STAGE - Ir of none) / (N * REPEATS) is the
// stage's instruction count per value (bench/random/breakdown.sh does that).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu_kernels/glibc_math.hpp"
#include "cpu_kernels/simd.hpp"
#include "engines/box_muller_double.hpp"
#include "engines/normal_icdf.hpp"
#include "keel/random/distributions.hpp"

namespace {

namespace simd = keel::random::detail::simd;

template <class F>
double best_ns_per_value(int repeats, std::size_t n, F&& f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best / static_cast<double>(n) * 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr,
               "usage: {} avx2|avx512 none|u32|uniform|normal|log|sincos|icdf|double|double_glibc "
               "[N] [R]\n",
               argv[0]);
    return 2;
  }
  const std::string level = argv[1], stage = argv[2];
  const std::size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::size_t{1} << 16;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 200;
  const simd::level want = level == "avx512" ? simd::level::avx512 : simd::level::avx2;
  simd::force_level(want);
  if (simd::active_level() != want || n % 64 != 0 || repeats < 1) {
    fmt::print(stderr, "level {} not available, or N not a multiple of 64\n", level);
    return 2;
  }
  const keel::random::philox_key key{{1234u, 0u}};
  std::vector<std::uint32_t> words(2 * n);
  std::vector<float> in(n), out(n), out2(n);
  std::vector<double> zd(n);
  simd::philox_u32(words.data(), 0, 2 * n, key, nullptr);
  simd::philox_uniform(in.data(), 0, n, key, nullptr);  // logf's inputs: (0, 1]
  if (stage == "sincos")
    for (float& v : in) v *= 6.2831855f;  // the Box-Muller angles
  // The inverse CDF's table, built once per process: setup, not the icdf stage's cost.
  keel::random::detail::erfcinv_coefficients();
  // The vector math works 16 lanes at a time; icdf on all of N.
  std::uint64_t p = 0;
  double ns = 0;
  if (stage == "none") {
  } else if (stage == "u32") {
    ns = best_ns_per_value(repeats, n, [&] {
      simd::philox_u32(words.data(), p, n, key, nullptr);
      p += n;
    });
  } else if (stage == "uniform") {
    ns = best_ns_per_value(repeats, n, [&] {
      simd::philox_uniform(out.data(), p, n, key, nullptr);
      p += n;
    });
  } else if (stage == "normal") {
    ns = best_ns_per_value(repeats, n, [&] {
      simd::philox_normal(out.data(), p, n, key, 0.0f, 1.0f, nullptr);
      p += n;
    });
  } else if (stage == "log") {
    ns = best_ns_per_value(repeats, n, [&] {
      for (std::size_t i = 0; i < n; i += 16) simd::logf16(in.data() + i, out.data() + i);
    });
  } else if (stage == "sincos") {
    ns = best_ns_per_value(repeats, n, [&] {
      for (std::size_t i = 0; i < n; i += 16)
        simd::sincosf16(in.data() + i, out.data() + i, out2.data() + i);
    });
  } else if (stage == "icdf") {
    ns = best_ns_per_value(
        repeats, n, [&] { keel::random::detail::normal_icdf_floats(words.data(), n, out.data()); });
  } else if (stage == "double") {
    ns = best_ns_per_value(repeats, n, [&] {
      keel::random::detail::box_muller_doubles(words.data(), n / 2, zd.data());
    });
  } else if (stage == "double_glibc") {
    ns = best_ns_per_value(repeats, n, [&] {
      const std::uint32_t* w = words.data();
      for (std::size_t j = 0; j < n / 2; ++j, w += 4) {
        const auto z = keel::random::box_muller_double<keel::random::detail::glibc_math>(
            w[0], w[1], w[2], w[3]);
        zd[2 * j] = z.x;
        zd[2 * j + 1] = z.y;
      }
    });
  } else {
    fmt::print(stderr, "unknown stage {}\n", stage);
    return 2;
  }
  fmt::print("{} {} {:.3f} ns/value (checksum {})\n", level, stage, ns,
             out[n / 2] + out2[n / 3] + static_cast<float>(words[n / 5] & 1u) + zd[n / 7]);
  return 0;
}
