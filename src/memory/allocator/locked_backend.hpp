// locked_backend — the caching allocator's view of its backend, every call under one lock
// (internal).
//
// Backends are not thread-safe (backend.hpp). The allocator calls its backend under its own
// lock, except for the segment allocation that release_lock_on_cudamalloc moves outside it;
// this second lock, the backend lock, serialises every call so that the two may overlap.
// Lock order: the allocator lock, then the backend lock, never the other way; nothing is
// called back while the backend lock is held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>

#include "keel/memory/backend.hpp"

namespace keel::memory::detail {

class locked_backend {
 public:
  explicit locked_backend(backend& b) noexcept : backend_(b) {}

  backend& unlocked() const noexcept { return backend_; }
  std::string_view name() const noexcept { return backend_.name(); }

  std::optional<std::uint64_t> allocate_segment(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    return backend_.allocate_segment(bytes);
  }
  void free_segment(std::uint64_t address, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    backend_.free_segment(address, bytes);
  }
  bool supports_virtual_memory() const noexcept { return backend_.supports_virtual_memory(); }
  std::size_t page_granularity() const noexcept { return backend_.page_granularity(); }
  std::optional<std::uint64_t> reserve_range(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    return backend_.reserve_range(bytes);
  }
  void release_range(std::uint64_t address, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    backend_.release_range(address, bytes);
  }
  bool map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    return backend_.map_pages(range, offset, bytes);
  }
  void unmap_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    backend_.unmap_pages(range, offset, bytes);
  }
  std::size_t capacity() const noexcept {
    std::lock_guard lock(mutex_);
    return backend_.capacity();
  }
  std::size_t free_bytes() const noexcept {
    std::lock_guard lock(mutex_);
    return backend_.free_bytes();
  }
  event_id record_event(stream_id stream) {
    std::lock_guard lock(mutex_);
    return backend_.record_event(stream);
  }
  bool query_event(event_id event) {
    std::lock_guard lock(mutex_);
    return backend_.query_event(event);
  }
  void synchronize_event(event_id event) {
    std::lock_guard lock(mutex_);
    backend_.synchronize_event(event);
  }
  void destroy_event(event_id event) noexcept {
    std::lock_guard lock(mutex_);
    backend_.destroy_event(event);
  }

 private:
  backend& backend_;
  mutable std::mutex mutex_;
};

}  // namespace keel::memory::detail
