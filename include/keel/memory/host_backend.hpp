// host_backend — real memory from the operating system, so that everything the allocator
// hands out can be written to, on a machine without a GPU.
//
// Segments are anonymous private mappings. Virtual ranges are reserved PROT_NONE; mapping a
// page commits it with mprotect(PROT_READ|PROT_WRITE), unmapping releases it with
// madvise(MADV_DONTNEED) and makes it inaccessible again, so expandable segments grow and
// shrink with real memory. `capacity` caps what may be committed (segments plus mapped pages);
// the default is half of the machine's physical memory. Page granularity defaults to 2 MiB
// like CUDA's. Not thread-safe (see backend.hpp); streams are a stream_model.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "keel/memory/backend.hpp"
#include "keel/memory/detail/page_ledger.hpp"
#include "keel/memory/stream_model.hpp"

namespace keel::memory {

class host_backend final : public backend {
 public:
  explicit host_backend(std::size_t capacity = 0, std::size_t page = 2u << 20);
  ~host_backend() override;
  host_backend(const host_backend&) = delete;
  host_backend& operator=(const host_backend&) = delete;

  stream_model& streams() noexcept { return streams_; }

 private:
  std::string_view do_name() const noexcept override { return "host"; }
  std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) override;
  void do_free_segment(std::uint64_t address, std::size_t bytes) noexcept override;
  bool do_supports_virtual_memory() const noexcept override { return true; }
  std::size_t do_page_granularity() const noexcept override { return page_; }
  std::optional<std::uint64_t> do_reserve_range(std::size_t bytes) override;
  void do_release_range(std::uint64_t address, std::size_t bytes) noexcept override;
  bool do_map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) override;
  void do_unmap_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) noexcept override;
  std::size_t do_capacity() const noexcept override { return capacity_; }
  std::size_t do_used_bytes() const noexcept override { return used_; }
  event_id do_record_event(stream_id stream) override { return streams_.record(stream); }
  bool do_query_event(event_id event) override { return streams_.query(event); }
  void do_synchronize_event(event_id event) override { streams_.synchronize(event); }
  void do_destroy_event(event_id event) noexcept override { streams_.destroy(event); }

  std::size_t capacity_;
  std::size_t page_;
  std::size_t used_ = 0;
  std::unordered_map<std::uint64_t, std::size_t> segments_;
  detail::page_ledger ranges_;
  stream_model streams_;
};

}  // namespace keel::memory
