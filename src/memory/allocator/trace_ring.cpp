#include "trace_ring.hpp"

#include <algorithm>
#include <utility>

namespace keel::memory::detail {

void trace_ring::enable(bool on, std::size_t max_entries) {
  enabled_ = on;
  capacity_ = std::max<std::size_t>(1, max_entries);
  if (!on) {
    entries_.clear();
    next_ = 0;
  }
}

void trace_ring::push(trace_entry entry) {
  if (entries_.size() < capacity_) {
    entries_.push_back(std::move(entry));
  } else {
    entries_[next_] = std::move(entry);
    next_ = (next_ + 1) % capacity_;
  }
}

std::vector<trace_entry> trace_ring::entries() const {
  std::vector<trace_entry> out;
  out.reserve(entries_.size());
  out.insert(out.end(), entries_.begin() + static_cast<std::ptrdiff_t>(next_), entries_.end());
  out.insert(out.end(), entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

}  // namespace keel::memory::detail
