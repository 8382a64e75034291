// sim_backend — simulated device memory: addresses and capacity, no bytes.
//
// Deterministic: addresses come from an address_plan (address_plan.hpp: the recording's
// addresses while a replay follows it, else a model of the driver's order; by default
// ascending first fit from a fixed base), aligned to 2 MiB (so every address is 512-byte
// aligned, as PyTorch's blocks are). Capacity is enforced
// over segments plus mapped pages; page granularity is 2 MiB, as on CUDA. Every call is O(1)
// except map/unmap, which are O(pages) with a bitmap per range: replaying a 20k-event trace
// costs milliseconds. Not thread-safe (see backend.hpp); streams are a stream_model.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "keel/memory/address_plan.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/detail/page_ledger.hpp"
#include "keel/memory/stream_model.hpp"

namespace keel::memory {

class sim_backend final : public backend {
 public:
  static constexpr std::size_t k_unlimited = ~std::size_t{0};
  explicit sim_backend(std::size_t capacity = k_unlimited, std::size_t page = 2u << 20,
                       address_plan plan = {});

  stream_model& streams() noexcept { return streams_; }
  // The live segments and ranges, for tests: address -> size.
  const std::unordered_map<std::uint64_t, std::size_t>& segments() const noexcept {
    return segments_;
  }
  std::size_t mapped_bytes() const noexcept { return mapped_; }
  const address_plan& addresses() const noexcept { return plan_; }

 private:
  std::string_view do_name() const noexcept override { return "sim"; }
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
  std::size_t mapped_ = 0;
  address_plan plan_;
  std::unordered_map<std::uint64_t, std::size_t> segments_;
  detail::page_ledger ranges_;
  stream_model streams_;
};

}  // namespace keel::memory
