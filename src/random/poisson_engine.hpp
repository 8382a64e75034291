// Internal: curandGeneratePoisson on top of an engine — the engine supplies its 32-bit words
// (table path) or its Poisson normal stream (normal path) in cuRAND's layout, the
// distribution layer (keel/random/poisson.hpp) turns them into counts. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine.hpp"
#include "keel/random/poisson.hpp"

namespace keel::random::detail {

// cuRAND's statuses: success for n = 0, out_of_range for lambda <= 0 or > 400000 (NaN is
// accepted and gives zeros). `table` caches the last lambda's table between calls.
status generate_poisson(engine& e, std::unique_ptr<const poisson_table>& table, std::uint32_t* out, std::size_t n,
                        double lambda, unsigned threads);

}  // namespace keel::random::detail
