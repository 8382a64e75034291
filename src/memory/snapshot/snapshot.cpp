// The snapshot vocabulary's names (keel/memory/snapshot.hpp), as PyTorch's files spell them:
// the reader, the writer and every report use these.
#include "keel/memory/snapshot.hpp"

namespace keel::memory {

std::string_view to_string(trace_action action) noexcept {
  switch (action) {
    case trace_action::alloc: return "alloc";
    case trace_action::free_requested: return "free_requested";
    case trace_action::free_completed: return "free_completed";
    case trace_action::segment_alloc: return "segment_alloc";
    case trace_action::segment_free: return "segment_free";
    case trace_action::segment_map: return "segment_map";
    case trace_action::segment_unmap: return "segment_unmap";
    case trace_action::oom: return "oom";
    case trace_action::snapshot: return "snapshot";
    case trace_action::annotate: return "user_defined";  // PyTorch's name for it
  }
  return "?";
}

std::string_view to_string(block_state state) noexcept {
  switch (state) {
    case block_state::active_allocated: return "active_allocated";
    case block_state::active_pending_free: return "active_pending_free";
    case block_state::inactive: return "inactive";
  }
  return "?";
}

}  // namespace keel::memory
