// backend — the table of device-memory primitives a caching allocator is built on.
//
// A backend hands out device memory as integer addresses (a device pointer, a host pointer or
// a simulated address) in two ways: whole segments (cudaMalloc/cudaFree), and virtual ranges
// whose pages are mapped and unmapped individually (cuMemAddressReserve + cuMemCreate/cuMemMap;
// mmap PROT_NONE + mprotect/madvise on the host), which is what expandable segments need. It
// also models streams and events, so that cross-stream frees can be deferred until the work
// that used a block has finished.
//
// Contract of every primitive (public non-virtual functions validate, then call do_*):
// - Running out of device memory is an expected outcome: allocate_segment, reserve_range and
//   map_pages return std::nullopt / false, and leave no partial state. Any other failure
//   throws keel::backend_error. Arguments outside the contract throw keel::invalid_argument.
// - free_segment, release_range, unmap_pages and destroy_event are noexcept and must be
//   given exactly what was handed out.
// - Sizes passed to map_pages/unmap_pages and their offsets are multiples of
//   page_granularity(); map_pages never maps a page twice.
// - capacity() is the device's total memory, used_bytes() what this backend has committed
//   (segments plus mapped pages).
// Backends are not thread-safe: the caching allocator serialises calls under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace keel::memory {

// A stream: a raw cudaStream_t value on CUDA, any number elsewhere. 0 is the default stream.
using stream_id = std::uint64_t;
using event_id = std::uint64_t;

// 2^62 bytes (4 EiB): more memory than any device has. Every size entering keel::memory is
// checked against it: the caching allocator refuses larger requests with out_of_memory and
// never holds more in total, and snapshot values above it (sizes, recorded settings) are
// refused as malformed. Below it, sums of a few sizes cannot wrap a 64-bit integer.
inline constexpr std::size_t k_max_device_bytes = std::size_t{1} << 62;

class backend {
 public:
  virtual ~backend() = default;

  std::string_view name() const noexcept { return do_name(); }

  // Whole segments.
  std::optional<std::uint64_t> allocate_segment(std::size_t bytes);
  void free_segment(std::uint64_t address, std::size_t bytes) noexcept;

  // Virtual ranges and page mappings (expandable segments).
  bool supports_virtual_memory() const noexcept { return do_supports_virtual_memory(); }
  std::size_t page_granularity() const noexcept { return do_page_granularity(); }
  std::optional<std::uint64_t> reserve_range(std::size_t bytes);
  void release_range(std::uint64_t address, std::size_t bytes) noexcept;
  bool map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes);
  void unmap_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) noexcept;

  // Capacity.
  std::size_t capacity() const noexcept { return do_capacity(); }
  std::size_t used_bytes() const noexcept { return do_used_bytes(); }
  std::size_t free_bytes() const noexcept {
    return capacity() > used_bytes() ? capacity() - used_bytes() : 0;
  }

  // Streams and events: record marks the current end of the stream's work; query says
  // whether that work has completed; synchronize waits for it.
  event_id record_event(stream_id stream) { return do_record_event(stream); }
  bool query_event(event_id event) { return do_query_event(event); }
  void synchronize_event(event_id event) { do_synchronize_event(event); }
  void destroy_event(event_id event) noexcept { do_destroy_event(event); }

 private:
  virtual std::string_view do_name() const noexcept = 0;
  virtual std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) = 0;
  virtual void do_free_segment(std::uint64_t address, std::size_t bytes) noexcept = 0;
  virtual bool do_supports_virtual_memory() const noexcept = 0;
  virtual std::size_t do_page_granularity() const noexcept = 0;
  virtual std::optional<std::uint64_t> do_reserve_range(std::size_t bytes) = 0;
  virtual void do_release_range(std::uint64_t address, std::size_t bytes) noexcept = 0;
  virtual bool do_map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) = 0;
  virtual void do_unmap_pages(std::uint64_t range, std::size_t offset,
                              std::size_t bytes) noexcept = 0;
  virtual std::size_t do_capacity() const noexcept = 0;
  virtual std::size_t do_used_bytes() const noexcept = 0;
  virtual event_id do_record_event(stream_id stream) = 0;
  virtual bool do_query_event(event_id event) = 0;
  virtual void do_synchronize_event(event_id event) = 0;
  virtual void do_destroy_event(event_id event) noexcept = 0;
};

}  // namespace keel::memory
