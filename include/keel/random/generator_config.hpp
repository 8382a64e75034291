// generator_config — a host generator set up from plain values, as `keel rand` and
// `keel.rand.Generator` set one up.
//
// make_generator applies the settings in cuRAND's order (ordering, then dimensions or seed,
// then offset) and turns a refused setting into an exception: the quasi-random generators
// take dimensions and no seed; MT19937 refuses any offset, so an offset of 0 is not applied;
// a status that means bad input (type_error, out_of_range, length_not_multiple) is
// keel::invalid_argument naming the setting and cuRAND's status, any other
// keel::backend_error. check_status does the same for a generate call. Pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "keel/random/generator.hpp"
#include "keel/random/status.hpp"

namespace keel::random {

struct generator_config {
  rng_type type = rng_type::philox4_32_10;
  std::optional<std::uint64_t> seed;  // pseudo-random generators only (cuRAND's default: 0)
  std::uint64_t offset = 0;
  ordering order = ordering::pseudo_default;
  std::uint32_t dimensions = 1;  // quasi-random generators: 1..20000
  unsigned threads = 0;          // worker threads for large calls (0 = all)
};

generator make_generator(const generator_config& config);

// Throws as described above unless `s` is success; `what` names the call ("generate").
void check_status(status s, const char* what);

}  // namespace keel::random
