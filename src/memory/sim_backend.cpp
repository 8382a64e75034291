#include "keel/memory/sim_backend.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::memory {
namespace {
constexpr std::uint64_t k_alignment = 2u << 20;
std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }
}  // namespace

sim_backend::sim_backend(std::size_t capacity, std::size_t page) : capacity_(capacity), page_(page) {
  if (page == 0 || page % 512 != 0) {
    throw invalid_argument(fmt::format("sim backend: page size {} is not a multiple of 512", page));
  }
}

std::optional<std::uint64_t> sim_backend::do_allocate_segment(std::size_t bytes) {
  if (bytes > capacity_ - used_) return std::nullopt;
  const std::uint64_t address = next_segment_;
  next_segment_ += align_up(bytes, k_alignment);
  used_ += bytes;
  segments_.emplace(address, bytes);
  return address;
}

void sim_backend::do_free_segment(std::uint64_t address, std::size_t bytes) noexcept {
  if (segments_.erase(address) != 0) used_ -= bytes;
}

std::optional<std::uint64_t> sim_backend::do_reserve_range(std::size_t bytes) {
  const std::uint64_t address = next_range_;
  next_range_ += align_up(bytes, k_alignment) + k_alignment;  // a guard gap between ranges
  ranges_.emplace(address, range{bytes, {}});
  return address;
}

void sim_backend::do_release_range(std::uint64_t address, std::size_t bytes) noexcept {
  const auto it = ranges_.find(address);
  if (it == ranges_.end()) return;
  do_unmap_pages(address, 0, bytes);
  ranges_.erase(it);
}

bool sim_backend::do_map_pages(std::uint64_t address, std::size_t offset, std::size_t bytes) {
  const auto it = ranges_.find(address);
  if (it == ranges_.end() || offset + bytes > it->second.size) {
    throw invalid_argument(fmt::format("sim backend: map outside a reserved range at {:#x}", address));
  }
  if (bytes > capacity_ - used_) return false;
  auto& mapped = it->second.mapped;
  const std::size_t first = offset / page_;
  const std::size_t last = (offset + bytes) / page_;
  const auto clash = mapped.lower_bound(first);
  if (clash != mapped.end() && *clash < last) {
    throw invalid_argument(fmt::format("sim backend: page {} of {:#x} is mapped twice", *clash, address));
  }
  for (std::size_t p = first; p < last; ++p) mapped.insert(mapped.end(), p);
  used_ += bytes;
  mapped_ += bytes;
  return true;
}

void sim_backend::do_unmap_pages(std::uint64_t address, std::size_t offset,
                                 std::size_t bytes) noexcept {
  const auto it = ranges_.find(address);
  if (it == ranges_.end()) return;
  auto& mapped = it->second.mapped;
  const auto first = mapped.lower_bound(offset / page_);
  const auto last = mapped.lower_bound((offset + bytes) / page_);
  const auto count = static_cast<std::size_t>(std::distance(first, last));
  mapped.erase(first, last);
  used_ -= count * page_;
  mapped_ -= count * page_;
}

}  // namespace keel::memory
