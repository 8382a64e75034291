#include "expandable_segment.hpp"

#include <optional>

#include "keel/core/check.hpp"
#include "locked_backend.hpp"

namespace keel::memory::detail {

std::unique_ptr<expandable_segment> expandable_segment::reserve(locked_backend& device,
                                                                std::size_t page_size,
                                                                std::size_t pages,
                                                                stream_id stream) {
  const std::optional<std::uint64_t> base = device.reserve_range(pages * page_size);
  if (!base) return nullptr;
  return std::unique_ptr<expandable_segment>(
      new expandable_segment(device, *base, page_size, pages, stream));
}

expandable_segment::~expandable_segment() { device_.release_range(base_, size()); }

std::size_t expandable_segment::map_extent(std::uint64_t ptr, std::size_t size) const noexcept {
  const std::size_t begin = (ptr - base_) / page_;
  const std::size_t end = (ptr + size - base_ + page_ - 1) / page_;
  return begin < end ? (end - begin) * page_ : 0;
}

std::size_t expandable_segment::map(std::uint64_t ptr, std::size_t size) {
  const std::size_t begin = (ptr - base_) / page_;
  const std::size_t end = (ptr + size - base_ + page_ - 1) / page_;
  if (begin >= end) return 0;
  KEEL_DCHECK(end <= max_pages_, "mapping pages [{}, {}) of a {}-page range", begin, end,
              max_pages_);
  const std::size_t bytes = (end - begin) * page_;
  if (!device_.map_pages(base_, begin * page_, bytes)) return 0;
  mark(begin, end, true);
  return bytes;
}

std::pair<std::uint64_t, std::size_t> expandable_segment::unmap(std::uint64_t ptr,
                                                                std::size_t size) noexcept {
  const std::size_t begin = (ptr - base_ + page_ - 1) / page_;
  const std::size_t end = (ptr + size - base_) / page_;
  if (begin >= end) return {ptr, 0};
  device_.unmap_pages(base_, begin * page_, (end - begin) * page_);
  mark(begin, end, false);
  return {base_ + begin * page_, (end - begin) * page_};
}

void expandable_segment::mark(std::size_t begin, std::size_t end, bool mapped) noexcept {
  if (mapped_.size() < end) mapped_.resize(end, false);
  for (std::size_t i = begin; i < end; ++i) {
    KEEL_DCHECK(mapped_[i] != mapped, "page {} of range {:#x} is {} already", i, base_,
                mapped ? "mapped" : "unmapped");
    mapped_[i] = mapped;
  }
  mapped_pages_ = mapped ? mapped_pages_ + (end - begin) : mapped_pages_ - (end - begin);
}

}  // namespace keel::memory::detail
