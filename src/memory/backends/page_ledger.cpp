#include "keel/memory/detail/page_ledger.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::memory::detail {

void page_ledger::check_unmapped(std::uint64_t address, std::size_t offset,
                                 std::size_t bytes) const {
  const auto it = ranges_.find(address);
  if (it == ranges_.end() || offset > it->second.size || bytes > it->second.size - offset) {
    throw invalid_argument(
        fmt::format("{} backend: map outside a reserved range at {:#x}", backend_, address));
  }
  const auto& runs = it->second.mapped;
  const std::size_t first = offset / page_;
  const std::size_t last = (offset + bytes) / page_;
  auto clash = runs.upper_bound(first);
  if (clash != runs.begin() && std::prev(clash)->second > first) --clash;
  if (clash != runs.end() && clash->first < last) {
    throw invalid_argument(fmt::format("{} backend: page {} of {:#x} is mapped twice", backend_,
                                       std::max(clash->first, first), address));
  }
}

void page_ledger::mark_mapped(std::uint64_t address, std::size_t offset, std::size_t bytes) {
  auto& runs = ranges_.at(address).mapped;
  std::size_t first = offset / page_;
  std::size_t last = (offset + bytes) / page_;
  if (first >= last) return;
  // Merge with the runs it touches (check_unmapped has ruled out overlaps).
  auto next = runs.lower_bound(first);
  if (next != runs.begin() && std::prev(next)->second == first) {
    --next;
    first = next->first;
    next = runs.erase(next);
  }
  if (next != runs.end() && next->first == last) {
    last = next->second;
    runs.erase(next);
  }
  runs.emplace(first, last);
}

}  // namespace keel::memory::detail
