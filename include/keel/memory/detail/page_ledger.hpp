// page_ledger — which pages of each reserved virtual range are mapped.
//
// The bookkeeping behind reserve_range/map_pages/unmap_pages for backends that keep it
// themselves (sim and host): ranges by base address, and per range its runs of mapped pages
// (so every call costs O(log runs), whatever the sizes). check_unmapped() enforces the backend
// contract (the bytes lie inside a reserved range and none of their pages is mapped yet) with
// keel::invalid_argument naming the backend. Not thread-safe: backends are called under their
// allocator's lock. A value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>

namespace keel::memory::detail {

class page_ledger {
 public:
  page_ledger(std::string_view backend, std::size_t page) : backend_(backend), page_(page) {}

  void add_range(std::uint64_t address, std::size_t size) {
    ranges_.emplace(address, range{size, {}});
  }
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
  // on_run(run_address, run_bytes) for each run of them first; returns how many pages there
  // were.
  template <class F>
  std::size_t unmark(std::uint64_t address, std::size_t offset, std::size_t bytes,
                     F on_run) noexcept {
    const auto it = ranges_.find(address);
    if (it == ranges_.end()) return 0;
    auto& runs = it->second.mapped;
    const std::size_t first = offset / page_;
    const std::size_t last = (bytes > SIZE_MAX - offset ? SIZE_MAX : offset + bytes) / page_;
    std::size_t count = 0;
    auto r = runs.upper_bound(first);
    if (r != runs.begin() && std::prev(r)->second > first) --r;
    while (r != runs.end() && r->first < last) {
      const std::size_t begin = r->first, end = r->second;
      const std::size_t cut_begin = begin < first ? first : begin;
      const std::size_t cut_end = end > last ? last : end;
      on_run(address + cut_begin * page_, (cut_end - cut_begin) * page_);
      count += cut_end - cut_begin;
      r = runs.erase(r);
      if (begin < cut_begin) runs.emplace(begin, cut_begin);
      if (cut_end < end) r = runs.emplace(cut_end, end).first;
    }
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
    std::map<std::size_t, std::size_t> mapped;  // runs of mapped pages: first -> one past last
  };
  std::string_view backend_;  // a string literal: "sim", "host"
  std::size_t page_;
  std::unordered_map<std::uint64_t, range> ranges_;
};

}  // namespace keel::memory::detail
