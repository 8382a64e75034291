// Internal: curandGeneratePoisson on top of an engine — the engine supplies its 32-bit words
// (table and inversion) or its Poisson normal stream (normal approximation) in cuRAND's
// layout, the distribution layer (keel/random/poisson.hpp) turns them into counts. Not a
// public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine.hpp"
#include "keel/random/poisson.hpp"

namespace keel::random::detail {

// The last lambda's table and inversion, kept between calls.
struct poisson_cache {
  std::unique_ptr<const poisson_table> table;
  std::unique_ptr<const poisson_inversion> inversion;
};

// cuRAND's statuses: success for n = 0, out_of_range for lambda <= 0 or > 400000 (NaN is
// accepted and gives poisson_nan_count(type)), then the engine's own (e.g. Sobol's
// length_not_multiple). `type` selects libcurand's method (poisson_method_for).
status generate_poisson(engine& e, rng_type type, poisson_cache& cache, std::uint32_t* out,
                        std::size_t n, double lambda, unsigned threads);

}  // namespace keel::random::detail
