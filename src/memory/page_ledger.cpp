#include "keel/memory/detail/page_ledger.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::memory::detail {

void page_ledger::check_unmapped(std::uint64_t address, std::size_t offset, std::size_t bytes) const {
  const auto it = ranges_.find(address);
  if (it == ranges_.end() || offset + bytes > it->second.size) {
    throw invalid_argument(fmt::format("{} backend: map outside a reserved range at {:#x}", backend_, address));
  }
  const auto& mapped = it->second.mapped;
  const auto clash = mapped.lower_bound(offset / page_);
  if (clash != mapped.end() && *clash < (offset + bytes) / page_) {
    throw invalid_argument(fmt::format("{} backend: page {} of {:#x} is mapped twice", backend_, *clash, address));
  }
}

void page_ledger::mark_mapped(std::uint64_t address, std::size_t offset, std::size_t bytes) {
  auto& mapped = ranges_.at(address).mapped;
  for (std::size_t p = offset / page_; p < (offset + bytes) / page_; ++p) mapped.insert(mapped.end(), p);
}

}  // namespace keel::memory::detail
