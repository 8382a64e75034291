#include "keel/memory/pool_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "keel/core/bytes.hpp"

namespace keel::memory {

void add_free_fragment(pool_summary& p, std::uint64_t bytes) {
  p.free += bytes;
  p.largest_free = std::max(p.largest_free, bytes);
  p.free_fragments.insert(
      std::upper_bound(p.free_fragments.begin(), p.free_fragments.end(), bytes, std::greater<>()),
      bytes);
}

std::string describe(const pool_summary& p) {
  if (p.segments == 0) return fmt::format("{} pool: empty.", p.small ? "Small" : "Large");
  std::string list;
  for (std::size_t i = 0; i < p.free_fragments.size() && i < 6; ++i) {
    list += (i ? ", " : "") + format_size(p.free_fragments[i]);
  }
  if (p.free_fragments.size() > 6) list += fmt::format(" and {} more", p.free_fragments.size() - 6);
  return fmt::format(
      "{} pool: {} segment{}, {} reserved, {} allocated, {} free in {} fragment{}{}.",
      p.small ? "Small" : "Large", p.segments, p.segments == 1 ? "" : "s", format_size(p.reserved),
      format_size(p.allocated), format_size(p.free), p.free_fragments.size(),
      p.free_fragments.size() == 1 ? "" : "s", list.empty() ? "" : " (" + list + ")");
}

}  // namespace keel::memory
