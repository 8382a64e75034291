// The snapshot vocabulary's names (keel/memory/snapshot.hpp), as PyTorch's files spell them:
// the reader, the writer and every report use these.
#include "keel/memory/snapshot.hpp"
#include "keel/core/enum_names.hpp"

namespace keel::memory {

namespace {
constexpr enum_entry<trace_action> k_trace_action_entries[] = {
    {trace_action::alloc, "alloc"},
    {trace_action::free_requested, "free_requested"},
    {trace_action::free_completed, "free_completed"},
    {trace_action::segment_alloc, "segment_alloc"},
    {trace_action::segment_free, "segment_free"},
    {trace_action::segment_map, "segment_map"},
    {trace_action::segment_unmap, "segment_unmap"},
    {trace_action::oom, "oom"},
    {trace_action::snapshot, "snapshot"},
    {trace_action::annotate, "user_defined"},  // PyTorch's name for it
    {trace_action::annotate, "annotate"},
};
constexpr enum_names<trace_action> k_trace_action_names{"trace action", k_trace_action_entries,
                                                        name_case::exact, "?"};
}  // namespace

std::string_view to_string(trace_action action) noexcept {
  return k_trace_action_names.name(action);
}

std::optional<trace_action> trace_action_named(std::string_view name) noexcept {
  return k_trace_action_names.find(name);
}

namespace {
constexpr enum_entry<block_state> k_block_state_entries[] = {
    {block_state::active_allocated, "active_allocated"},
    {block_state::active_pending_free, "active_pending_free"},
    {block_state::inactive, "inactive"},
};
constexpr enum_names<block_state> k_block_state_names{"block state", k_block_state_entries,
                                                      name_case::exact, "?"};
}  // namespace

std::string_view to_string(block_state state) noexcept { return k_block_state_names.name(state); }

}  // namespace keel::memory
