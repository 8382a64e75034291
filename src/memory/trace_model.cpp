#include "keel/memory/trace_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "keel/core/error.hpp"

namespace keel::memory {
namespace {

constexpr std::uint64_t k_small_segment = 2u << 20;  // PyTorch's kSmallBuffer
constexpr std::uint64_t k_small_request = 1u << 20;  // PyTorch's kSmallSize

struct segment_info {
  std::uint64_t size = 0;
  stream_id stream = 0;
  bool is_small = false;
};

// PyTorch's should_split for a non-expandable block of `size` holding a request of `request`.
bool should_split(const allocator_config& c, bool is_small, std::uint64_t size, std::uint64_t request) {
  const std::uint64_t remaining = size - request;
  if (is_small) return remaining >= 512;
  return request < c.max_split_size && remaining > k_small_request;
}

}  // namespace

std::vector<int> devices_in(const snapshot& s) {
  std::set<int> devices;
  for (std::size_t d = 0; d < s.device_traces.size(); ++d) {
    if (!s.device_traces[d].empty()) devices.insert(static_cast<int>(d));
  }
  for (const snapshot_segment& seg : s.segments) devices.insert(seg.device);
  return {devices.begin(), devices.end()};
}

allocator_config recorded_config(const snapshot& s) {
  allocator_config c;
  if (!s.settings) return c;
  const allocator_settings& r = *s.settings;
  c.expandable_segments = r.expandable_segments;
  if (r.max_split_size > 0) c.max_split_size = static_cast<std::size_t>(r.max_split_size);
  c.garbage_collection_threshold = r.garbage_collection_threshold;
  for (std::size_t i = 0; i < r.roundup_power2_divisions.size() && i < allocator_config::k_intervals; ++i) {
    c.roundup_power2_divisions[i] = static_cast<std::size_t>(std::max<std::int64_t>(0, r.roundup_power2_divisions[i]));
  }
  if (r.max_non_split_rounding_size && *r.max_non_split_rounding_size > 0) {
    c.max_non_split_rounding_size = static_cast<std::size_t>(*r.max_non_split_rounding_size);
  }
  return c;
}

trace_model build_trace_model(const snapshot& s, int device) {
  trace_model m;
  m.device = device;
  m.recorded_config = recorded_config(s);
  m.settings_recorded = s.settings.has_value();
  static const std::vector<trace_entry> k_none;
  const std::vector<trace_entry>& entries =
      device >= 0 && static_cast<std::size_t>(device) < s.device_traces.size()
          ? s.device_traces[static_cast<std::size_t>(device)]
          : k_none;
  m.entries = entries.size();

  std::map<std::uint64_t, segment_info> segments;  // final segments of this device
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    segments[seg.address] = {seg.total_size, seg.stream, !seg.is_large};
  }
  if (segments.empty() && entries.empty()) {
    throw invalid_argument(fmt::format("device {} has neither segments nor trace entries", device));
  }

  // Forward: the ops, and the blocks that were live before the window.
  std::unordered_map<std::uint64_t, std::uint64_t> window_live;  // addr -> requested
  struct early_block {
    std::uint64_t addr;
    std::uint64_t requested;
    std::uint64_t exact_size;  // 0 when only the request is known
  };
  std::vector<early_block> early;
  bool in_free_run = false;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const trace_entry& e = entries[i];
    const auto index = static_cast<std::uint32_t>(i);
    const bool segment_release =
        e.action == trace_action::segment_free || e.action == trace_action::segment_unmap;
    if (segment_release && !in_free_run) m.ops.push_back({op_kind::empty_cache, 0, 0, e.stream, index});
    in_free_run = segment_release;
    switch (e.action) {
      case trace_action::alloc:
        window_live[e.addr] = e.size;
        m.ops.push_back({op_kind::alloc, e.addr, e.size, e.stream, index});
        break;
      case trace_action::free_completed:
        if (window_live.erase(e.addr) == 0) early.push_back({e.addr, e.size, 0});
        m.ops.push_back({op_kind::free, e.addr, e.size, e.stream, index});
        break;
      case trace_action::segment_alloc:
      case trace_action::segment_map:
        m.recorded_segments.push_back({e.action, e.size, index});
        break;
      case trace_action::oom:
        m.ooms.push_back({index, e.size, e.device_free});
        break;
      default:
        break;
    }
  }
  // Final active blocks that no alloc in the window explains were live all along.
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state != block_state::inactive && window_live.count(b.address) == 0) {
        early.push_back({b.address, b.requested_size, b.size});
      }
    }
  }

  // Backward: the segments that existed when the window began.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const trace_entry& e = *it;
    if (e.action == trace_action::segment_alloc || e.action == trace_action::segment_map) {
      if (segments.erase(e.addr) == 0) {
        m.notes.push_back(fmt::format("segment at {:#x} allocated in the window is not in the final "
                                      "state nor freed later", e.addr));
      }
    } else if (e.action == trace_action::segment_free || e.action == trace_action::segment_unmap) {
      segments[e.addr] = {e.size, e.stream, e.size == k_small_segment};
    }
  }

  // Place the early blocks into the starting segments.
  std::map<std::uint64_t, std::vector<early_block>> per_segment;
  for (const early_block& b : early) {
    auto it = segments.upper_bound(b.addr);
    if (it == segments.begin() || std::prev(it)->first + std::prev(it)->second.size <= b.addr) {
      m.notes.push_back(fmt::format("block at {:#x} live before the window lies in no segment; ignored", b.addr));
      continue;
    }
    per_segment[std::prev(it)->first].push_back(b);
  }
  for (const auto& [address, info] : segments) {
    start_segment seg;
    seg.address = address;
    seg.total_size = info.size;
    seg.stream = info.stream;
    seg.is_small = info.is_small;
    std::vector<early_block>& blocks = per_segment[address];
    std::sort(blocks.begin(), blocks.end(),
              [](const early_block& a, const early_block& b) { return a.addr < b.addr; });
    std::uint64_t cursor = address;
    const std::uint64_t end = address + info.size;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const early_block& b = blocks[i];
      if (b.addr < cursor) {
        m.notes.push_back(fmt::format("block at {:#x} overlaps the block before it; ignored", b.addr));
        continue;
      }
      if (b.addr > cursor) seg.blocks.push_back({cursor, b.addr - cursor, 0, false});
      const std::uint64_t limit = i + 1 < blocks.size() ? std::min(blocks[i + 1].addr, end) : end;
      std::uint64_t size = b.exact_size != 0 ? b.exact_size : m.recorded_config.round_size(b.requested);
      if (b.addr + size > limit) {
        m.notes.push_back(fmt::format("block at {:#x} ({} bytes) is cut to fit before the next one",
                                      b.addr, size));
        size = limit - b.addr;
      }
      // A block absorbs the remainder PyTorch would not have split off.
      const std::uint64_t gap = limit - (b.addr + size);
      if (b.exact_size == 0 && gap > 0 && !should_split(m.recorded_config, seg.is_small, size + gap, size)) {
        size += gap;
      }
      seg.blocks.push_back({b.addr, size, b.requested, true});
      m.start_requested += b.requested;
      cursor = b.addr + size;
    }
    if (cursor < end) seg.blocks.push_back({cursor, end - cursor, 0, false});
    m.start_reserved += info.size;
    m.start.push_back(std::move(seg));
  }
  return m;
}

}  // namespace keel::memory
