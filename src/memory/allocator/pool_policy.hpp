// pool_policy — the decisions in which keel's policy differs from PyTorch's (internal).
//
// The caching allocator's mechanism (best fit, splitting, coalescing, segments and pages) is
// the same for every policy; a pool_policy answers the questions where policies differ: does
// it always use page-mapped (expandable) segments, which pool a request goes to, how large an
// expandable segment's pages are, and how much free memory to unmap before the device is
// asked for more. `pytorch` answers as PyTorch's CUDA caching allocator does; `keel` uses
// 2 MiB pages in one pool per stream and recycles whole free pages above its high-water mark
// (docs/memory.md). Called under the allocator's lock; a policy may keep state.
#pragma once

#include <cstddef>
#include <memory>

#include "keel/memory/allocator_config.hpp"

namespace keel::memory::detail {

class pool_policy {
 public:
  static std::unique_ptr<pool_policy> make(policy_kind kind);
  virtual ~pool_policy() = default;

  // Page-mapped segments whatever expandable_segments says.
  virtual bool always_expandable() const noexcept = 0;
  // Whether a request of `rounded` bytes is served from the small pool.
  virtual bool uses_small_pool(std::size_t rounded) const noexcept = 0;
  // The page of an expandable segment of the small or the large pool, before rounding up to
  // the backend's granularity.
  virtual std::size_t page_size(bool small_pool) const noexcept = 0;
  // Whether recycle_bytes() ever asks for anything (the OOM message suggests a policy that
  // does when this one does not).
  virtual bool recycles_free_pages() const noexcept = 0;
  // Before `wanted` more bytes are mapped while `reserved` bytes are held: how many bytes of
  // whole free pages to unmap first (0: none).
  virtual std::size_t recycle_bytes(std::size_t reserved, std::size_t wanted) noexcept = 0;
};

}  // namespace keel::memory::detail
