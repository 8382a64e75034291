#include "engines/box_muller_double.hpp"

#include "cpu_kernels/glibc_math.hpp"
#include "cpu_kernels/simd.hpp"
#include "keel/random/distributions.hpp"

namespace keel::random::detail {

void box_muller_doubles(const std::uint32_t* w, std::size_t pairs, double* z) {
  using kernel = std::size_t (*)(const std::uint32_t*, std::size_t, double*);
  std::size_t done = 0;
  if (const kernel k = simd::by_level<kernel>(nullptr, simd::avx2::box_muller_doubles,
                                              simd::avx512::box_muller_doubles))
    done = k(w, pairs, z);
  for (std::size_t j = done; j < pairs; ++j) {
    const double_pair p =
        box_muller_double<glibc_math>(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
    z[2 * j] = p.x;
    z[2 * j + 1] = p.y;
  }
}

}  // namespace keel::random::detail
