// stream_events — the stream-ordered part of freeing: a block used on other streams returns
// to its pool only when the work queued on each of them has completed (internal).
//
// record() marks, on every stream a block was used on, the current end of that stream's work
// with a backend event; process() collects the events that completed, in the order they were
// recorded on each stream, and hands a block on (ready(b)) once its last event has completed;
// synchronize_all() waits for every event. What happens to a ready block (coalescing, the
// pools) is the caller's: this class knows streams and events only, as rmm's
// stream_ordered_memory_resource keeps them apart from the pool. Not thread-safe: the
// allocator keeps it under its lock.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "block.hpp"
#include "locked_backend.hpp"

namespace keel::memory::detail {

class stream_events {
 public:
  explicit stream_events(locked_backend& device) noexcept : device_(device) {}
  ~stream_events() { destroy_all(); }
  stream_events(const stream_events&) = delete;
  stream_events& operator=(const stream_events&) = delete;

  // Records one event per stream in b->stream_uses (which it empties) and counts them in
  // b->event_count.
  void record(block* b) {
    std::vector<stream_id> streams;
    streams.swap(b->stream_uses);
    for (stream_id s : streams) {
      const event_id e = device_.record_event(s);
      ++b->event_count;
      queues_[s].emplace_back(e, b);
    }
  }

  // Collects the completed events at the head of every stream's queue; calls ready(b) for
  // each block whose last event completed.
  template <class F>
  void process(F&& ready) {
    for (auto it = queues_.begin(); it != queues_.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        auto [event, b] = queue.front();
        if (!device_.query_event(event)) break;
        device_.destroy_event(event);
        queue.pop_front();
        if (--b->event_count == 0) ready(b);
      }
      it = queue.empty() ? queues_.erase(it) : std::next(it);
    }
  }

  // Waits for every event; calls ready(b) for each block as its last event completes.
  template <class F>
  void synchronize_all(F&& ready) {
    for (auto& [stream, queue] : queues_) {
      for (auto& [event, b] : queue) {
        device_.synchronize_event(event);
        device_.destroy_event(event);
        if (--b->event_count == 0) ready(b);
      }
    }
    queues_.clear();
  }

  // Calls f(b) for every (block, pending event) pair: a block once per event it waits for.
  template <class F>
  void for_each_waiting(F&& f) const {
    for (const auto& [stream, queue] : queues_) {
      for (const auto& [event, b] : queue) f(b);
    }
  }

  // Destroys every outstanding event without waiting (the allocator is going away).
  void destroy_all() noexcept {
    for (auto& [stream, queue] : queues_) {
      for (auto& [event, b] : queue) device_.destroy_event(event);
    }
    queues_.clear();
  }

 private:
  locked_backend& device_;
  std::map<stream_id, std::deque<std::pair<event_id, block*>>> queues_;
};

}  // namespace keel::memory::detail
