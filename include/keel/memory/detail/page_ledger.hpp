// page_ledger — which pages of each reserved virtual range are mapped.
//
// The bookkeeping behind reserve_range/map_pages/unmap_pages for backends that keep it
// themselves (sim and host): ranges by base address, and per range the indices of its mapped
// pages. check_unmapped() enforces the backend contract (the bytes lie inside a reserved
// range and none of their pages is mapped yet) with keel::invalid_argument naming the
// backend. Not thread-safe: backends are called under their allocator's lock. A value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <set>
#include <string_view>
#include <unordered_map>

namespace keel::memory::detail {

class page_ledger {
 public:
  page_ledger(std::string_view backend, std::size_t page) : backend_(backend), page_(page) {}

  void add_range(std::uint64_t address, std::size_t size) { ranges_.emplace(address, range{size, {}}); }
  // The size of the range reserved at `address`, or 0 when there is none.
  std::size_t range_size(std::uint64_t address) const noexcept {
    const auto it = ranges_.find(address);
    return it == ranges_.end() ? 0 : it->second.size;
  }
  void remove_range(std::uint64_t address) noexcept { ranges_.erase(address); }

  // Throws invalid_argument unless [offset, offset + bytes) of the range at `address` exists
  // and holds no mapped page.
  void check_unmapped(std::uint64_t address, std::size_t offset, std::size_t bytes) const;
  void mark_mapped(std::uint64_t address, std::size_t offset, std::size_t bytes);
  // Forgets the mapped pages in [offset, offset + bytes) of the range at `address`, calling
  // on_page(page_address) for each first; returns how many there were.
  template <class F>
  std::size_t unmark(std::uint64_t address, std::size_t offset, std::size_t bytes, F on_page) noexcept {
    const auto it = ranges_.find(address);
    if (it == ranges_.end()) return 0;
    auto& mapped = it->second.mapped;
    const auto first = mapped.lower_bound(offset / page_);
    const auto last = mapped.lower_bound((offset + bytes) / page_);
    for (auto p = first; p != last; ++p) on_page(address + *p * page_);
    const auto count = static_cast<std::size_t>(std::distance(first, last));
    mapped.erase(first, last);
    return count;
  }
  // Calls f(address, size) for every reserved range.
  template <class F>
  void for_each_range(F f) const {
    for (const auto& [address, r] : ranges_) f(address, r.size);
  }

 private:
  struct range {
    std::size_t size = 0;
    std::set<std::size_t> mapped;  // indices of mapped pages
  };
  std::string_view backend_;  // a string literal: "sim", "host"
  std::size_t page_;
  std::unordered_map<std::uint64_t, range> ranges_;
};

}  // namespace keel::memory::detail
