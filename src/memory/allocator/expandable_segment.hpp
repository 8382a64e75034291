// expandable_segment — a virtual range whose pages are mapped on demand (PyTorch's
// ExpandableSegment), owning its reservation and its page mapping (internal).
//
// The range is reserved from the backend when the segment is made and released (with every
// page still mapped) when it is destroyed. map() and unmap() take byte ranges inside it:
// map() backs every page that [ptr, ptr + size) touches, unmap() gives back every whole page
// inside [ptr, ptr + size). The segment remembers which pages are mapped, so that it never
// maps a page twice nor unmaps one that is not mapped (KEEL_DCHECK). Not thread-safe: the
// allocator calls it under its lock; the backend must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "keel/memory/backend.hpp"

namespace keel::memory::detail {

class locked_backend;

class expandable_segment {
 public:
  // Reserves `pages` pages of `page_size` bytes for `stream`; nullptr when the backend has no
  // address space left. Throws what the backend throws.
  static std::unique_ptr<expandable_segment> reserve(locked_backend& device, std::size_t page_size,
                                                     std::size_t pages, stream_id stream);
  ~expandable_segment();
  expandable_segment(const expandable_segment&) = delete;
  expandable_segment& operator=(const expandable_segment&) = delete;

  std::uint64_t base() const noexcept { return base_; }
  std::size_t page_size() const noexcept { return page_; }
  std::size_t size() const noexcept { return page_ * max_pages_; }
  stream_id stream() const noexcept { return stream_; }
  std::size_t mapped_bytes() const noexcept { return mapped_pages_ * page_; }

  // The bytes map(ptr, size) would map: the pages [ptr, ptr + size) touches.
  std::size_t map_extent(std::uint64_t ptr, std::size_t size) const noexcept;
  // Maps the pages [ptr, ptr + size) touches, none of which may be mapped; returns the bytes
  // mapped, 0 when the device is out of memory (nothing is mapped then). Throws what the
  // backend throws.
  std::size_t map(std::uint64_t ptr, std::size_t size);
  // Unmaps the whole pages inside [ptr, ptr + size), all of which must be mapped; returns
  // {first unmapped address, bytes} (bytes 0 when no whole page lies inside).
  std::pair<std::uint64_t, std::size_t> unmap(std::uint64_t ptr, std::size_t size) noexcept;

 private:
  expandable_segment(locked_backend& device, std::uint64_t base, std::size_t page_size,
                     std::size_t pages, stream_id stream) noexcept
      : device_(device), base_(base), page_(page_size), max_pages_(pages), stream_(stream) {}
  void mark(std::size_t begin, std::size_t end, bool mapped) noexcept;

  locked_backend& device_;
  std::uint64_t base_;
  std::size_t page_;
  std::size_t max_pages_;
  stream_id stream_;
  std::size_t mapped_pages_ = 0;
  std::vector<bool> mapped_;  // per page, up to the highest page mapped so far
};

}  // namespace keel::memory::detail
