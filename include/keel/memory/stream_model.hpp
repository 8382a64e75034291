// stream_model — streams and events for backends without a real device (sim, host).
//
// Work on a stream is modelled as "busy" or "idle". An event recorded on an idle stream is
// complete at once; one recorded on a busy stream completes when the stream is marked idle
// (or when someone synchronizes on it, which waits for the stream and so makes it idle).
// Tests and replays use set_busy to hold frees back, exactly as kernels still running on a
// side stream would on a GPU. Not thread-safe (backends are used under the allocator lock).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "keel/memory/backend.hpp"

namespace keel::memory {

class stream_model {
 public:
  void set_busy(stream_id stream, bool busy);
  bool busy(stream_id stream) const { return busy_.count(stream) != 0; }

  event_id record(stream_id stream);
  bool query(event_id event) const;
  void synchronize(event_id event);
  void destroy(event_id event) noexcept { pending_.erase(event); }

 private:
  std::unordered_set<stream_id> busy_;
  std::unordered_map<event_id, stream_id> pending_;  // events not complete yet
  event_id next_event_ = 1;
};

}  // namespace keel::memory
