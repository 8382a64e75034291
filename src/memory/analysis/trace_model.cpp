#include "keel/memory/trace_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <unordered_map>

#include "keel/core/error.hpp"
#include "trace_model_parts.hpp"

namespace keel::memory {
namespace {

using namespace trace_detail;

struct segment_info {
  std::uint64_t size = 0;
  stream_id stream = 0;
  bool is_small = false;
};

// PyTorch's should_split for a block of `size` holding a request of `request`.
bool should_split(const allocator_config& c, bool is_small, std::uint64_t size,
                  std::uint64_t request) {
  const std::uint64_t remaining = size - request;
  if (is_small || c.expandable_segments) return remaining >= 512;
  return request < c.max_split_size && remaining > k_small_request;
}

// A set of disjoint half-open byte intervals [begin, end), merged when they touch.
class interval_set {
 public:
  void add(std::uint64_t begin, std::uint64_t end) {
    if (begin >= end) return;
    auto it = spans_.upper_bound(begin);
    if (it != spans_.begin() && std::prev(it)->second >= begin) --it;
    while (it != spans_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = spans_.erase(it);
    }
    spans_.emplace(begin, end);
  }
  // Removes [begin, end); returns how many of its bytes were in the set.
  std::uint64_t remove(std::uint64_t begin, std::uint64_t end) {
    std::uint64_t removed = 0;
    auto it = spans_.upper_bound(begin);
    if (it != spans_.begin()) --it;
    while (it != spans_.end() && it->first < end) {
      const auto [b, e] = *it;
      if (e <= begin) {
        ++it;
        continue;
      }
      it = spans_.erase(it);
      removed += std::min(e, end) - std::max(b, begin);
      if (b < begin) spans_.emplace(b, begin);
      if (e > end) it = spans_.emplace(end, e).first;
    }
    return removed;
  }
  const std::map<std::uint64_t, std::uint64_t>& spans() const noexcept { return spans_; }

 private:
  std::map<std::uint64_t, std::uint64_t> spans_;  // begin -> end
};

bool grows(trace_action a) {
  return a == trace_action::segment_alloc || a == trace_action::segment_map;
}
bool shrinks(trace_action a) {
  return a == trace_action::segment_free || a == trace_action::segment_unmap;
}
bool is_segment_event(trace_action a) { return grows(a) || shrinks(a); }
bool is_page_event(trace_action a) {
  return a == trace_action::segment_map || a == trace_action::segment_unmap;
}

// The expandable ranges of one device: one per (stream, pool), as PyTorch reserves them. Each
// page event belongs to the range of its stream with the greatest base at or below it.
class range_table {
 public:
  void note_final_run(std::uint64_t address, stream_id stream, bool is_small) {
    touch(stream, is_small, address, std::nullopt);
  }
  void note_event(const segment_event& e) {
    if (const recorded_range* r = owner(e.stream, e.addr)) {
      first_use_.try_emplace(r->base, e.entry);
      return;
    }
    // Below every known range of its stream: a range whose pages were all unmapped by the
    // end, or an earlier part of a known one. The page size tells the pool.
    touch(e.stream, e.size % k_large_page != 0, e.addr, e.entry);
  }
  const recorded_range* owner(stream_id stream, std::uint64_t address) const {
    const recorded_range* best = nullptr;
    for (const recorded_range& r : ranges_) {
      if (r.stream == stream && r.base <= address && (best == nullptr || r.base > best->base))
        best = &r;
    }
    return best;
  }
  // The end of the span of the range at `base`: the next range's base (or the top of memory).
  std::uint64_t span_end(std::uint64_t base) const {
    std::uint64_t end = ~std::uint64_t{0};
    for (const recorded_range& r : ranges_) {
      if (r.base > base) end = std::min(end, r.base);
    }
    return end;
  }
  // Ranges with pages mapped at the start first (by address), then by first use in the window.
  std::vector<recorded_range> ordered(const std::set<std::uint64_t>& mapped_at_start) const {
    std::vector<recorded_range> out = ranges_;
    const auto key = [&](const recorded_range& r) {
      const bool at_start = mapped_at_start.count(r.base) != 0;
      const auto first = first_use_.find(r.base);
      return std::tuple{!at_start,
                        at_start ? 0u : (first == first_use_.end() ? ~0u : first->second), r.base};
    };
    std::sort(out.begin(), out.end(),
              [&](const auto& a, const auto& b) { return key(a) < key(b); });
    return out;
  }
  bool empty() const noexcept { return ranges_.empty(); }

 private:
  void touch(stream_id stream, bool is_small, std::uint64_t address,
             std::optional<std::uint32_t> entry) {
    for (recorded_range& r : ranges_) {
      if (r.stream == stream && r.is_small == is_small) {
        if (address < r.base) {
          const auto first = first_use_.find(r.base);
          if (first != first_use_.end()) {
            first_use_.emplace(address, first->second);
            first_use_.erase(r.base);
          }
          r.base = address;
        }
        if (entry) first_use_.try_emplace(r.base, *entry);
        return;
      }
    }
    ranges_.push_back({address, stream, is_small});
    if (entry) first_use_.try_emplace(address, *entry);
  }

  std::vector<recorded_range> ranges_;
  std::map<std::uint64_t, std::uint32_t> first_use_;  // base -> first window entry using it
};

struct early_block {
  std::uint64_t addr;
  std::uint64_t requested;
  std::uint64_t exact_size;  // 0 when only the request is known
  frame_stack frames;
};

const frame_stack& before_the_window() {
  static const frame_stack k_stack{
      frame{"<before the trace window>", 0, "allocated before the trace window"}};
  return k_stack;
}

// Tiles one starting segment with the blocks live in it and free gaps.
void place_blocks(trace_model& m, note_book& notes, start_segment& seg,
                  std::vector<early_block>& blocks) {
  std::sort(blocks.begin(), blocks.end(),
            [](const early_block& a, const early_block& b) { return a.addr < b.addr; });
  std::uint64_t cursor = seg.address;
  const std::uint64_t end = seg.address + seg.total_size;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const early_block& b = blocks[i];
    if (b.addr < cursor) {
      notes.add("a block live before the window overlaps the block before it; ignored",
                fmt::format("{:#x}", b.addr));
      continue;
    }
    if (b.addr > cursor) seg.blocks.push_back({cursor, b.addr - cursor, 0, false, {}});
    const std::uint64_t limit = i + 1 < blocks.size() ? std::min(blocks[i + 1].addr, end) : end;
    if (limit <= b.addr) {  // the next block starts at the same address
      notes.add("a block live before the window overlaps the block after it; ignored",
                fmt::format("{:#x}", b.addr));
      continue;
    }
    std::uint64_t size =
        b.exact_size != 0 ? b.exact_size : m.recorded_config.round_size(b.requested);
    std::uint64_t requested = b.requested;
    if (size > limit - b.addr) {
      notes.add("a block live before the window is cut to fit before the next one",
                fmt::format("{:#x} ({} bytes)", b.addr, size));
      size = limit - b.addr;
      requested = std::min(requested, size);  // a block never holds more than its size
    }
    // A block absorbs the remainder PyTorch would not have split off.
    const std::uint64_t gap = limit - (b.addr + size);
    if (b.exact_size == 0 && gap > 0 &&
        !should_split(m.recorded_config, seg.is_small, size + gap, size)) {
      size += gap;
    }
    seg.blocks.push_back({b.addr, size, requested, true, b.frames});
    m.start_requested += requested;
    cursor = b.addr + size;
  }
  if (cursor < end) seg.blocks.push_back({cursor, end - cursor, 0, false, {}});
}

}  // namespace

std::optional<std::uint64_t> trace_model::recorded_budget() const {
  if (ooms.empty()) return std::nullopt;
  return ooms.back().budget();
}

std::vector<segment_event> trace_model::recorded_growth() const {
  std::vector<segment_event> out;
  for (const segment_event& e : segment_events) {
    if (grows(e.action)) out.push_back(e);
  }
  return out;
}

live_state trace_model::live_at(std::uint32_t entry) const {
  struct held {
    live_allocation a;
    bool pending = false;
  };
  std::unordered_map<std::uint64_t, held> blocks;  // recorded address -> allocation
  for (const start_segment& seg : start) {
    for (const start_block& b : seg.blocks) {
      if (b.live) blocks[b.address] = {{b.size, b.requested, b.frames}, false};
    }
  }
  auto request = free_requests.begin();
  for (const replay_op& op : ops) {
    if (op.entry >= entry) break;
    for (; request != free_requests.end() && request->first < op.entry; ++request) {
      const auto it = blocks.find(request->second);
      if (it != blocks.end()) it->second.pending = true;
    }
    if (op.kind == op_kind::alloc) {
      blocks[op.addr] = {{recorded_config.round_size(op.size), op.size, op.frames}, false};
    } else if (op.kind == op_kind::free) {
      blocks.erase(op.addr);
    }
  }
  for (; request != free_requests.end() && request->first < entry; ++request) {
    const auto it = blocks.find(request->second);
    if (it != blocks.end()) it->second.pending = true;
  }
  std::vector<std::pair<std::uint64_t, held>> ordered(blocks.begin(), blocks.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  live_state out;
  for (auto& [address, h] : ordered) {
    if (h.pending) {
      out.pending_bytes = add_saturating(out.pending_bytes, h.a.bytes);
      out.pending.push_back(std::move(h.a));
    } else {
      out.live_bytes = add_saturating(out.live_bytes, h.a.bytes);
      out.live_requested = add_saturating(out.live_requested, h.a.requested);
      out.live.push_back(std::move(h.a));
    }
  }
  return out;
}

std::vector<driver_call> trace_model::start_calls() const {
  std::vector<driver_call> out;
  for (const start_segment& seg : start) {
    if (!seg.expandable) out.push_back({true, seg.address, seg.total_size});
  }
  return out;
}

std::vector<driver_call> trace_model::window_calls() const {
  std::vector<driver_call> out;
  for (const segment_event& e : segment_events) {
    if (e.action == trace_action::segment_alloc) out.push_back({true, e.addr, e.size});
    if (e.action == trace_action::segment_free) out.push_back({false, e.addr, e.size});
  }
  return out;
}

std::vector<std::uint64_t> trace_model::range_bases() const {
  std::vector<std::uint64_t> out;
  for (const recorded_range& r : ranges) out.push_back(r.base);
  return out;
}

std::vector<int> devices_in(const snapshot& s) {
  std::set<int> devices;
  for (std::size_t d = 0; d < s.device_traces.size(); ++d) {
    if (!s.device_traces[d].empty()) devices.insert(static_cast<int>(d));
  }
  for (const snapshot_segment& seg : s.segments) devices.insert(seg.device);
  return {devices.begin(), devices.end()};
}
trace_model build_trace_model(const snapshot& s, int device) {
  trace_model m;
  note_book notes;
  m.device = device;
  check_snapshot(s, device, notes);
  m.recorded_config = recorded_config(s);
  m.settings_recorded = s.settings.has_value();
  if (s.settings) {
    m.grammar = recorded_grammar(*s.settings);
    settings_notes(*s.settings, notes);
  }
  static const std::vector<trace_entry> k_none;
  const std::vector<trace_entry>& entries =
      device >= 0 && static_cast<std::size_t>(device) < s.device_traces.size()
          ? s.device_traces[static_cast<std::size_t>(device)]
          : k_none;
  m.entries = entries.size();

  // The final state: cudaMalloc segments by address, and the mapped pages of expandable ones.
  std::map<std::uint64_t, segment_info> segments;
  interval_set mapped;
  range_table ranges;
  bool any_segment = false;
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    any_segment = true;
    if (seg.is_expandable) {
      mapped.add(seg.address, seg.address + seg.total_size);
      ranges.note_final_run(seg.address, seg.stream, !seg.is_large);
    } else {
      segments[seg.address] = {seg.total_size, seg.stream, !seg.is_large};
    }
  }
  if (!any_segment && entries.empty()) {
    throw invalid_argument(fmt::format("device {} has neither segments nor trace entries", device));
  }

  for (std::size_t i = 0; i < entries.size(); ++i) {
    const trace_entry& e = entries[i];
    if (e.time_us) {
      if (!m.first_time_us) m.first_time_us = e.time_us;
      m.last_time_us = e.time_us;
    }
    if (!is_segment_event(e.action)) continue;
    m.segment_events.push_back({e.action, e.addr, e.size, e.stream, static_cast<std::uint32_t>(i)});
    if (is_page_event(e.action)) ranges.note_event(m.segment_events.back());
  }

  // Backward: what was reserved when the window began.
  for (auto it = m.segment_events.rbegin(); it != m.segment_events.rend(); ++it) {
    const segment_event& e = *it;
    switch (e.action) {
      case trace_action::segment_alloc:
        if (segments.erase(e.addr) == 0) {
          notes.add(
              "a segment allocated in the window is neither in the final state nor freed later",
              fmt::format("{:#x}", e.addr));
        }
        break;
      case trace_action::segment_free:
        segments[e.addr] = {e.size, e.stream, e.size == k_small_segment};
        break;
      case trace_action::segment_map:
        if (mapped.remove(e.addr, e.addr + e.size) != e.size) {
          notes.add(
              "pages mapped in the window are neither mapped in the final state nor unmapped later",
              fmt::format("{:#x} ({} bytes)", e.addr, e.size));
        }
        break;
      case trace_action::segment_unmap: mapped.add(e.addr, e.addr + e.size); break;
      default: break;
    }
  }

  // Forward: the ops, the blocks that were live before the window, the running reservation.
  std::uint64_t start_reserved = 0;
  for (const auto& [address, info] : segments)
    start_reserved = add_saturating(start_reserved, info.size);
  for (const auto& [begin, end] : mapped.spans())
    start_reserved = add_saturating(start_reserved, end - begin);
  if (start_reserved > k_max_device_bytes) {
    refuse(fmt::format("device {}", device),
           fmt::format("the recording implies {} bytes reserved when its window begins, more "
                       "than any device has (2^62)",
                       start_reserved));
  }
  m.start_reserved = m.recorded_peak_reserved = start_reserved;
  std::uint64_t reserved = start_reserved;
  std::unordered_map<std::uint64_t, std::uint64_t> window_live;  // addr -> requested
  std::vector<early_block> early;
  bool in_free_run = false;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const trace_entry& e = entries[i];
    const auto index = static_cast<std::uint32_t>(i);
    if (shrinks(e.action) && !in_free_run)
      m.ops.push_back({op_kind::empty_cache, 0, 0, e.stream, index, {}});
    in_free_run = shrinks(e.action);
    switch (e.action) {
      case trace_action::alloc:
        window_live[e.addr] = e.size;
        m.ops.push_back({op_kind::alloc, e.addr, e.size, e.stream, index, e.frames});
        break;
      case trace_action::free_completed:
        if (window_live.erase(e.addr) == 0)
          early.push_back({e.addr, e.size, 0, before_the_window()});
        m.ops.push_back({op_kind::free, e.addr, e.size, e.stream, index, {}});
        break;
      case trace_action::free_requested: m.free_requests.emplace_back(index, e.addr); break;
      case trace_action::segment_alloc:
      case trace_action::segment_map:
        if (e.size > k_max_device_bytes - reserved) {
          refuse(fmt::format("device_traces[{}][{}]", device, i),
                 fmt::format("{} takes the memory reserved above 2^62 bytes, more than any device "
                             "has",
                             to_string(e.action)));
        }
        reserved += e.size;
        if (reserved > m.recorded_peak_reserved) {
          m.recorded_peak_reserved = reserved;
          m.recorded_peak_entry = index;
        }
        break;
      case trace_action::segment_free:
      case trace_action::segment_unmap:
        reserved = reserved >= e.size ? reserved - e.size : 0;
        break;
      case trace_action::oom:
        m.ooms.push_back({index, e.size, e.device_free, reserved});
        m.ops.push_back({op_kind::oom, 0, e.size, e.stream, index, e.frames});
        break;
      default: break;
    }
  }
  // Final active blocks that no alloc in the window explains were live all along.
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state != block_state::inactive && window_live.count(b.address) == 0) {
        early.push_back({b.address, b.requested_size, b.size, b.frames});
      }
    }
  }

  // The starting segments: cudaMalloc segments, and the mapped runs of each expandable range.
  std::vector<start_segment> start;
  for (const auto& [address, info] : segments) {
    start_segment seg;
    seg.address = address;
    seg.total_size = info.size;
    seg.stream = info.stream;
    seg.is_small = info.is_small;
    start.push_back(std::move(seg));
  }
  std::set<std::uint64_t> ranges_at_start;
  const std::vector<recorded_range> all_ranges = ranges.ordered({});
  for (const auto& [begin, end] : mapped.spans()) {
    // A run may cross from one range's span into the next; cut it at range boundaries.
    for (std::uint64_t b = begin; b < end;) {
      const recorded_range* r = nullptr;
      for (const recorded_range& candidate : all_ranges) {
        if (candidate.base <= b && (r == nullptr || candidate.base > r->base)) r = &candidate;
      }
      if (r == nullptr) {
        notes.add("mapped pages lie below every expandable range; treated as their own range",
                  fmt::format("{:#x}", b));
      }
      const recorded_range range = r != nullptr ? *r : recorded_range{b, 0, false};
      const std::uint64_t e = std::min(end, ranges.span_end(range.base));
      start_segment seg;
      seg.address = b;
      seg.total_size = e - b;
      seg.stream = range.stream;
      seg.is_small = range.is_small;
      seg.expandable = true;
      seg.range_base = range.base;
      ranges_at_start.insert(range.base);
      start.push_back(std::move(seg));
      b = e;
    }
  }
  std::sort(start.begin(), start.end(),
            [](const start_segment& a, const start_segment& b) { return a.address < b.address; });
  m.ranges = ranges.ordered(ranges_at_start);
  for (const start_segment& seg : start) {
    const std::uint64_t page = seg.is_small ? k_small_segment : k_large_page;
    if (seg.expandable &&
        (seg.total_size % page != 0 || (seg.address - seg.range_base) % page != 0)) {
      notes.add(
          "mapped pages at the start are not whole pages of PyTorch's expandable "
          "segments (2 MiB small, 20 MiB large); where a replay cannot map them it holds "
          "them as a plain segment",
          fmt::format("{:#x} ({} bytes)", seg.address, seg.total_size));
    }
  }

  // Place the early blocks into the starting segments.
  std::map<std::uint64_t, std::vector<early_block>> per_segment;  // segment address -> blocks
  for (const early_block& b : early) {
    auto it =
        std::upper_bound(start.begin(), start.end(), b.addr,
                         [](std::uint64_t a, const start_segment& s) { return a < s.address; });
    if (it == start.begin() || std::prev(it)->address + std::prev(it)->total_size <= b.addr) {
      notes.add("a block live before the window lies in no segment; ignored",
                fmt::format("{:#x}", b.addr));
      continue;
    }
    per_segment[std::prev(it)->address].push_back(b);
  }
  for (start_segment& seg : start) place_blocks(m, notes, seg, per_segment[seg.address]);
  m.start = std::move(start);
  m.driver_order = address_plan::infer(m.start_calls(), m.window_calls());
  m.notes = notes.take();
  return m;
}

}  // namespace keel::memory
