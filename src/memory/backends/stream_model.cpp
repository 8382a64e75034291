#include "keel/memory/stream_model.hpp"

namespace keel::memory {

void stream_model::set_busy(stream_id stream, bool busy) {
  if (busy) {
    busy_.insert(stream);
    return;
  }
  busy_.erase(stream);
  for (auto it = pending_.begin(); it != pending_.end();) {
    it = it->second == stream ? pending_.erase(it) : std::next(it);
  }
}

event_id stream_model::record(stream_id stream) {
  const event_id id = next_event_++;
  if (busy(stream)) pending_.emplace(id, stream);
  return id;
}

bool stream_model::query(event_id event) const { return pending_.count(event) == 0; }

void stream_model::synchronize(event_id event) {
  const auto it = pending_.find(event);
  if (it != pending_.end()) set_busy(it->second, false);  // waiting drains the stream
}

}  // namespace keel::memory
