#include "keel/memory/backend.hpp"

#include <fmt/format.h>

#include "keel/core/error.hpp"

namespace keel::memory {

std::optional<std::uint64_t> backend::allocate_segment(std::size_t bytes) {
  if (bytes == 0)
    throw invalid_argument(fmt::format("{}: cannot allocate an empty segment", name()));
  return do_allocate_segment(bytes);
}

void backend::free_segment(std::uint64_t address, std::size_t bytes) noexcept {
  do_free_segment(address, bytes);
}

std::optional<std::uint64_t> backend::reserve_range(std::size_t bytes) {
  if (!supports_virtual_memory()) {
    throw invalid_argument(fmt::format("{}: virtual memory is not supported", name()));
  }
  if (bytes == 0 || bytes % page_granularity() != 0) {
    throw invalid_argument(
        fmt::format("{}: range size {} is not a positive multiple of the {} "
                    "byte page",
                    name(), bytes, page_granularity()));
  }
  return do_reserve_range(bytes);
}

void backend::release_range(std::uint64_t address, std::size_t bytes) noexcept {
  do_release_range(address, bytes);
}

bool backend::map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) {
  const std::size_t page = page_granularity();
  if (bytes == 0 || offset % page != 0 || bytes % page != 0) {
    throw invalid_argument(
        fmt::format("{}: map of {} bytes at offset {} is not page aligned", name(), bytes, offset));
  }
  return do_map_pages(range, offset, bytes);
}

void backend::unmap_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) noexcept {
  do_unmap_pages(range, offset, bytes);
}

}  // namespace keel::memory
