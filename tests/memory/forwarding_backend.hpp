// Test support: a backend that forwards every call to a sim_backend it owns (inner_), for
// tests that change one or two of its behaviours (a segment allocation that waits, driver
// addresses that differ) and keep the rest. Not part of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "keel/memory/backend.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory::test {

class forwarding_backend : public backend {
 public:
  explicit forwarding_backend(std::size_t capacity = sim_backend::k_unlimited) : inner_(capacity) {}

 protected:
  std::string_view do_name() const noexcept override { return "forwarding"; }
  std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) override {
    return inner_.allocate_segment(bytes);
  }
  void do_free_segment(std::uint64_t a, std::size_t bytes) noexcept override {
    inner_.free_segment(a, bytes);
  }
  bool do_supports_virtual_memory() const noexcept override {
    return inner_.supports_virtual_memory();
  }
  std::size_t do_page_granularity() const noexcept override { return inner_.page_granularity(); }
  std::optional<std::uint64_t> do_reserve_range(std::size_t bytes) override {
    return inner_.reserve_range(bytes);
  }
  void do_release_range(std::uint64_t a, std::size_t bytes) noexcept override {
    inner_.release_range(a, bytes);
  }
  bool do_map_pages(std::uint64_t r, std::size_t o, std::size_t b) override {
    return inner_.map_pages(r, o, b);
  }
  void do_unmap_pages(std::uint64_t r, std::size_t o, std::size_t b) noexcept override {
    inner_.unmap_pages(r, o, b);
  }
  std::size_t do_capacity() const noexcept override { return inner_.capacity(); }
  std::size_t do_used_bytes() const noexcept override { return inner_.used_bytes(); }
  event_id do_record_event(stream_id s) override { return inner_.record_event(s); }
  bool do_query_event(event_id e) override { return inner_.query_event(e); }
  void do_synchronize_event(event_id e) override { inner_.synchronize_event(e); }
  void do_destroy_event(event_id e) noexcept override { inner_.destroy_event(e); }

  sim_backend inner_;
};

}  // namespace keel::memory::test
