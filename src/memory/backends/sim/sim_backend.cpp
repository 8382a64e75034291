#include "keel/memory/sim_backend.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::memory {
sim_backend::sim_backend(std::size_t capacity, std::size_t page, address_plan plan)
    : capacity_(capacity), page_(page), plan_(std::move(plan)), ranges_("sim", page) {
  if (page == 0 || page % 512 != 0) {
    throw invalid_argument(fmt::format("sim backend: page size {} is not a multiple of 512", page));
  }
}

std::optional<std::uint64_t> sim_backend::do_allocate_segment(std::size_t bytes) {
  if (bytes > capacity_ - used_) return std::nullopt;
  const std::optional<std::uint64_t> address = plan_.place_segment(bytes);
  if (!address) return std::nullopt;  // the simulated address space is full
  used_ += bytes;
  segments_.emplace(*address, bytes);
  return address;
}

void sim_backend::do_free_segment(std::uint64_t address, std::size_t bytes) noexcept {
  if (segments_.erase(address) == 0) return;
  used_ -= bytes;
  plan_.free_segment(address);
}

std::optional<std::uint64_t> sim_backend::do_reserve_range(std::size_t bytes) {
  const std::optional<std::uint64_t> address = plan_.place_range(bytes);
  if (!address) return std::nullopt;
  ranges_.add_range(*address, bytes);
  return address;
}

void sim_backend::do_release_range(std::uint64_t address, std::size_t bytes) noexcept {
  if (ranges_.range_size(address) == 0) return;
  do_unmap_pages(address, 0, bytes);
  ranges_.remove_range(address);
  plan_.release_range(address);
}

bool sim_backend::do_map_pages(std::uint64_t address, std::size_t offset, std::size_t bytes) {
  ranges_.check_unmapped(address, offset, bytes);
  if (bytes > capacity_ - used_) return false;
  ranges_.mark_mapped(address, offset, bytes);
  used_ += bytes;
  mapped_ += bytes;
  return true;
}

void sim_backend::do_unmap_pages(std::uint64_t address, std::size_t offset,
                                 std::size_t bytes) noexcept {
  const std::size_t pages =
      ranges_.unmark(address, offset, bytes, [](std::uint64_t, std::size_t) {});
  used_ -= pages * page_;
  mapped_ -= pages * page_;
}

}  // namespace keel::memory
