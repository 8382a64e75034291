// Internal: factories of the engines behind keel::random::generator.
#pragma once

#include <memory>

#include "engine.hpp"

namespace keel::random::detail {

std::unique_ptr<engine> make_philox_engine();
std::unique_ptr<engine> make_xorwow_engine();
std::unique_ptr<engine> make_mrg32k3a_engine();
std::unique_ptr<engine> make_sobol32_engine();
// Null when the scrambled tables are unavailable (keel/random/sobol_tables.hpp says why).
std::unique_ptr<engine> make_scrambled_sobol32_engine();
std::unique_ptr<engine> make_mt19937_engine();
// Null when MTGP32's parameter sets are not available (keel/random/mtgp32_tables.hpp).
std::unique_ptr<engine> make_mtgp32_engine();

}  // namespace keel::random::detail
