#include "pool_policy.hpp"

#include <algorithm>

#include "keel/memory/caching_allocator.hpp"

namespace keel::memory::detail {
namespace {

// PyTorch's rules: requests up to 1 MiB in the small pool, 2 MiB (small) and 20 MiB (large)
// pages, nothing given back before the device is asked.
class pytorch_policy final : public pool_policy {
 public:
  bool always_expandable() const noexcept override { return false; }
  bool uses_small_pool(std::size_t rounded) const noexcept override {
    return rounded <= k_small_size;
  }
  std::size_t page_size(bool small_pool) const noexcept override {
    return small_pool ? k_small_buffer : k_large_buffer;
  }
  bool recycles_free_pages() const noexcept override { return false; }
  std::size_t recycle_bytes(std::size_t, std::size_t) noexcept override { return 0; }
};

// keel's: page-mapped segments with 2 MiB pages, one pool per stream (small blocks fill the
// tails of large blocks' last pages). Before mapping pages that would take reserved memory
// above its high-water mark, whole free pages are given back, as many as the excess: reserved
// memory never grows while whole free pages exist, and below the mark nothing is unmapped
// only to be mapped again (each map/unmap is a driver call on CUDA).
class keel_policy final : public pool_policy {
 public:
  bool always_expandable() const noexcept override { return true; }
  bool uses_small_pool(std::size_t) const noexcept override { return false; }
  std::size_t page_size(bool) const noexcept override { return k_small_buffer; }
  bool recycles_free_pages() const noexcept override { return true; }
  std::size_t recycle_bytes(std::size_t reserved, std::size_t wanted) noexcept override {
    high_water_ = std::max(high_water_, reserved);
    if (reserved + wanted <= high_water_) return 0;
    return reserved + wanted - high_water_;
  }

 private:
  std::size_t high_water_ = 0;  // the most reserved memory so far
};

}  // namespace

std::unique_ptr<pool_policy> pool_policy::make(policy_kind kind) {
  if (kind == policy_kind::keel) return std::make_unique<keel_policy>();
  return std::make_unique<pytorch_policy>();
}

}  // namespace keel::memory::detail
