// cuda_backend — the backend primitives on a real NVIDIA GPU.
//
// Segments are cudaMalloc/cudaFree. Virtual ranges are the driver's virtual memory management
// API: cuMemAddressReserve reserves a range, map_pages backs each page with its own physical
// allocation (cuMemCreate, cuMemMap, cuMemSetAccess for this device) and unmap_pages gives it
// back (cuMemUnmap, cuMemRelease), so any page can be returned independently, which is what
// expandable segments and keel's page recycling need. page_granularity() is the device's
// minimum allocation granularity (2 MiB on current GPUs). capacity() is the device's total
// memory (cudaMemGetInfo); used_bytes() counts what this backend has committed. Events come
// from a pool of cudaEvent_t created with cudaEventDisableTiming; record_event records one on
// the given stream (a raw cudaStream_t value, 0 = the legacy default stream).
//
// Device memory exhaustion (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY) is returned
// as std::nullopt / false with the CUDA error state cleared; every other CUDA failure throws
// keel::backend_error naming the call and the CUDA error. Every primitive makes `device()`
// current for its duration and restores the caller's device afterwards.
//
// The driver entry points are obtained through the runtime (cudaGetDriverEntryPointByVersion),
// so nothing links libcuda and a program using this class loads, and can report "no device",
// on a machine without the NVIDIA driver.
//
// Thread-safety: none (see backend.hpp); the caching allocator serialises calls. Ownership:
// the destructor frees every segment, range and event still held.
#pragma once

#include <memory>
#include <string>

#include "keel/memory/backend.hpp"

namespace keel::memory {

class cuda_backend final : public backend {
 public:
  // Binds to CUDA device `device`. Throws keel::backend_error when there is no such device.
  // On a device or driver without virtual memory management, supports_virtual_memory() is
  // false (the caching allocator then falls back to whole segments).
  explicit cuda_backend(int device = 0);
  ~cuda_backend() override;
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  int device() const noexcept;

  // Synchronous cudaMemset / cudaMemcpy on this device, for tests and tools that check the
  // bytes handed out. Throw keel::backend_error on failure.
  void fill(std::uint64_t address, unsigned char value, std::size_t bytes);
  void copy_to_host(void* destination, std::uint64_t source, std::size_t bytes);

  // Number of CUDA devices; 0 when there is none or no usable driver (never throws).
  // `reason`, when given, receives the CUDA error that explains a 0.
  static int device_count(std::string* reason = nullptr) noexcept;

 private:
  class impl;
  std::string_view do_name() const noexcept override { return "cuda"; }
  std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) override;
  void do_free_segment(std::uint64_t address, std::size_t bytes) noexcept override;
  bool do_supports_virtual_memory() const noexcept override;
  std::size_t do_page_granularity() const noexcept override;
  std::optional<std::uint64_t> do_reserve_range(std::size_t bytes) override;
  void do_release_range(std::uint64_t address, std::size_t bytes) noexcept override;
  bool do_map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) override;
  void do_unmap_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) noexcept override;
  std::size_t do_capacity() const noexcept override;
  std::size_t do_used_bytes() const noexcept override;
  event_id do_record_event(stream_id stream) override;
  bool do_query_event(event_id event) override;
  void do_synchronize_event(event_id event) override;
  void do_destroy_event(event_id event) noexcept override;

  std::unique_ptr<impl> impl_;
};

}  // namespace keel::memory
