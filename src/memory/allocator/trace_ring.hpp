// trace_ring — the allocator's history: the last N trace entries, oldest first (internal).
//
// Off until enabled; enabling keeps what is recorded, disabling drops it. When full, a new
// entry replaces the oldest. A plain value, not thread-safe: the allocator keeps it under its
// lock.
#pragma once

#include <cstddef>
#include <vector>

#include "keel/memory/snapshot.hpp"

namespace keel::memory::detail {

class trace_ring {
 public:
  bool enabled() const noexcept { return enabled_; }
  // Turns recording on (keeping at most max(1, max_entries) entries) or off (dropping them).
  void enable(bool on, std::size_t max_entries);
  void push(trace_entry entry);
  // The entries held, oldest first.
  std::vector<trace_entry> entries() const;

 private:
  bool enabled_ = false;
  std::size_t capacity_ = 1;
  std::vector<trace_entry> entries_;
  std::size_t next_ = 0;  // the oldest entry once full
};

}  // namespace keel::memory::detail
