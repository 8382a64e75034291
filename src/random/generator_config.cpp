#include "keel/random/generator_config.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::random {

void check_status(status s, const char* what) {
  if (s == status::success) return;
  if (s == status::type_error || s == status::out_of_range || s == status::length_not_multiple) {
    throw invalid_argument(fmt::format("{}: {}", what, to_string(s)));
  }
  throw backend_error(fmt::format("{}: {}", what, to_string(s)));
}

generator make_generator(const generator_config& config) {
  generator g(config.type);
  g.set_threads(config.threads);
  if (config.order != ordering::pseudo_default)
    check_status(g.set_ordering(config.order), "set ordering");
  if (is_quasi(config.type)) {
    if (config.seed) {
      throw invalid_argument(
          fmt::format("{} is quasi-random and takes no seed", to_string(config.type)));
    }
    check_status(g.set_dimensions(config.dimensions), "set dimensions");
  } else {
    if (config.dimensions != 1) check_status(g.set_dimensions(config.dimensions), "set dimensions");
    check_status(g.set_seed(config.seed.value_or(0)), "set seed");
  }
  // Only when asked: MT19937 refuses any offset (as libcurand), even 0.
  if (config.offset != 0) check_status(g.set_offset(config.offset), "set offset");
  return g;
}

}  // namespace keel::random
