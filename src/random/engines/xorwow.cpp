#include "keel/random/xorwow.hpp"

namespace keel::random {
namespace {

// Not constexpr (a lambda would be), so that the static below is initialized at run time
// without the compiler first trying the 131 matrix squarings as a constant expression.
const xorwow_jump_table* build_jumps() {
  auto* t = new xorwow_jump_table;
  t->jump[0] = detail::xorwow_matrix::of(detail::xorwow_linear_step);
  for (int k = 1; k < xorwow_jump_table::k_count; ++k)
    t->jump[k] = t->jump[k - 1].compose(t->jump[k - 1]);
  return t;
}

}  // namespace

const xorwow_jump_table& xorwow_jumps() {
  static const xorwow_jump_table* table = build_jumps();
  return *table;
}

}  // namespace keel::random
