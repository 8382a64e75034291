// What build_trace_model refuses or notes in a snapshot before modelling one device.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "keel/core/error.hpp"
#include "trace_model_parts.hpp"

namespace keel::memory::trace_detail {

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw invalid_argument(fmt::format("{}: {}", where, what));
}

// Sizes a model is built from, checked whatever made the snapshot (read_snapshot refuses the
// same as parse errors): sizes up to k_max_device_bytes, ranges inside the address space, a
// block in use no smaller than its request. Notes what is only odd.
void check_snapshot(const snapshot& s, int device, note_book& notes) {
  if (s.settings) {
    const allocator_settings& r = *s.settings;
    // PyTorch's split sizes start at 20 MiB (max_split_size -1 is unlimited).
    const auto bad_size = [](std::int64_t v) {
      return v < static_cast<std::int64_t>(k_large_segment) ||
             v > static_cast<std::int64_t>(k_max_device_bytes);
    };
    if (r.max_split_size != -1 && bad_size(r.max_split_size))
      refuse("allocator_settings", fmt::format("max_split_size {}", r.max_split_size));
    if (r.max_non_split_rounding_size && bad_size(*r.max_non_split_rounding_size)) {
      refuse("allocator_settings",
             fmt::format("max_non_split_rounding_size {}", *r.max_non_split_rounding_size));
    }
    if (!(r.garbage_collection_threshold >= 0.0 && r.garbage_collection_threshold < 1.0)) {
      refuse("allocator_settings", fmt::format("garbage_collection_threshold {} is outside [0, 1)",
                                               r.garbage_collection_threshold));
    }
    for (const std::int64_t d : r.roundup_power2_divisions) {
      if (d < 0 || (d != 0 && !std::has_single_bit(static_cast<std::uint64_t>(d))))
        refuse("allocator_settings",
               fmt::format("roundup_power2_divisions {} is neither 0 nor a power of 2", d));
    }
    try {
      (void)recorded_config(r);
    } catch (const invalid_argument& e) {
      refuse("allocator_settings", e.what());
    }
  }
  for (std::size_t i = 0; i < s.segments.size(); ++i) {
    const snapshot_segment& seg = s.segments[i];
    if (seg.device != device) continue;
    const auto where = [&] { return fmt::format("segments[{}]", i); };
    if (seg.total_size == 0 || seg.total_size > k_max_device_bytes)
      refuse(where(), fmt::format("a segment of {} bytes", seg.total_size));
    if (seg.total_size > k_top - seg.address)
      refuse(where(), "the segment extends past the end of the address space");
    std::uint64_t allocated = 0, active = 0, requested = 0;
    for (std::size_t j = 0; j < seg.blocks.size(); ++j) {
      const snapshot_block& b = seg.blocks[j];
      const auto at = [&] { return fmt::format("segments[{}].blocks[{}]", i, j); };
      if (b.size > k_max_device_bytes || b.size > k_top - b.address)
        refuse(at(), fmt::format("a block of {} bytes at {:#x}", b.size, b.address));
      if (b.requested_size > k_max_device_bytes)
        refuse(at(), fmt::format("a request of {} bytes", b.requested_size));
      if (b.state != block_state::inactive && b.requested_size > b.size) {
        refuse(at(), fmt::format("a block in use of {} bytes cannot hold a request of {} bytes",
                                 b.size, b.requested_size));
      }
      if (b.state == block_state::active_allocated) allocated = add_saturating(allocated, b.size);
      if (b.state != block_state::inactive) {
        active = add_saturating(active, b.size);
        requested = add_saturating(requested, b.requested_size);
      }
      if (j > 0 && !seg.is_expandable && b.state == block_state::inactive &&
          seg.blocks[j - 1].state == block_state::inactive) {
        notes.add("a segment holds two free blocks side by side, which PyTorch would have merged",
                  fmt::format("{:#x}", b.address));
      }
    }
    if (seg.allocated_size != allocated || seg.active_size != active ||
        seg.requested_size != requested) {
      notes.add(
          "a segment's allocated, active or requested size disagrees with its blocks; the "
          "blocks are used",
          fmt::format("{:#x}", seg.address));
    }
    if (!seg.is_large && !seg.is_expandable && seg.total_size != k_small_segment) {
      notes.add("a small-pool segment is not PyTorch's 2 MiB",
                fmt::format("{:#x} ({} bytes)", seg.address, seg.total_size));
    }
  }
  if (device < 0 || static_cast<std::size_t>(device) >= s.device_traces.size()) return;
  const std::vector<trace_entry>& entries = s.device_traces[static_cast<std::size_t>(device)];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const trace_entry& e = entries[i];
    if (e.size > k_max_device_bytes || e.device_free > k_max_device_bytes ||
        e.size > k_top - e.addr) {
      refuse(fmt::format("device_traces[{}][{}]", device, i),
             fmt::format("{} of {} bytes at {:#x} (device_free {})", to_string(e.action), e.size,
                         e.addr, e.device_free));
    }
  }
}

}  // namespace keel::memory::trace_detail
