#include "keel/memory/host_backend.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "keel/core/error.hpp"

namespace keel::memory {
namespace {

std::size_t default_capacity() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::size_t{1} << 32;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2;
}

void* as_pointer(std::uint64_t address) { return reinterpret_cast<void*>(address); }

}  // namespace

host_backend::host_backend(std::size_t capacity, std::size_t page)
    : capacity_(capacity == 0 ? default_capacity() : capacity), page_(page), ranges_("host", page) {
  const auto os_page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (page == 0 || page % os_page != 0) {
    throw invalid_argument(fmt::format(
        "host backend: page size {} is not a multiple of the OS page {}", page, os_page));
  }
}

host_backend::~host_backend() {
  for (const auto& [address, size] : segments_) munmap(as_pointer(address), size);
  ranges_.for_each_range(
      [](std::uint64_t address, std::size_t size) { munmap(as_pointer(address), size); });
}

std::optional<std::uint64_t> host_backend::do_allocate_segment(std::size_t bytes) {
  if (bytes > capacity_ - used_) return std::nullopt;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    if (errno == ENOMEM) return std::nullopt;
    throw backend_error(
        fmt::format("host backend: mmap of {} bytes failed: {}", bytes, std::strerror(errno)));
  }
  const auto address = reinterpret_cast<std::uint64_t>(p);
  segments_.emplace(address, bytes);
  used_ += bytes;
  return address;
}

void host_backend::do_free_segment(std::uint64_t address, std::size_t bytes) noexcept {
  if (segments_.erase(address) == 0) return;
  munmap(as_pointer(address), bytes);
  used_ -= bytes;
}

std::optional<std::uint64_t> host_backend::do_reserve_range(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    if (errno == ENOMEM) return std::nullopt;
    throw backend_error(fmt::format("host backend: reserving {} bytes of address space failed: {}",
                                    bytes, std::strerror(errno)));
  }
  const auto address = reinterpret_cast<std::uint64_t>(p);
  ranges_.add_range(address, bytes);
  return address;
}

void host_backend::do_release_range(std::uint64_t address, std::size_t bytes) noexcept {
  const std::size_t size = ranges_.range_size(address);
  if (size == 0) return;
  do_unmap_pages(address, 0, bytes);
  munmap(as_pointer(address), size);
  ranges_.remove_range(address);
}

bool host_backend::do_map_pages(std::uint64_t address, std::size_t offset, std::size_t bytes) {
  ranges_.check_unmapped(address, offset, bytes);
  if (bytes > capacity_ - used_) return false;
  if (mprotect(as_pointer(address + offset), bytes, PROT_READ | PROT_WRITE) != 0) {
    if (errno == ENOMEM) return false;
    throw backend_error(fmt::format("host backend: mprotect failed: {}", std::strerror(errno)));
  }
  ranges_.mark_mapped(address, offset, bytes);
  used_ += bytes;
  return true;
}

void host_backend::do_unmap_pages(std::uint64_t address, std::size_t offset,
                                  std::size_t bytes) noexcept {
  const std::size_t pages =
      ranges_.unmark(address, offset, bytes, [](std::uint64_t run, std::size_t run_bytes) {
        madvise(as_pointer(run), run_bytes, MADV_DONTNEED);  // give the memory back
        mprotect(as_pointer(run), run_bytes, PROT_NONE);     // and fault on any later touch
      });
  used_ -= pages * page_;
}

}  // namespace keel::memory
