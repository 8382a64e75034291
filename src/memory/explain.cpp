#include "keel/memory/explain.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "keel/core/bytes.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/replay.hpp"

namespace keel::memory {
namespace {

pool_summary summarize(const snapshot& state, bool small) {
  pool_summary p;
  p.small = small;
  for (const snapshot_segment& seg : state.segments) {
    if (seg.is_large == small) continue;
    ++p.segments;
    p.reserved += seg.total_size;
    p.allocated += seg.allocated_size;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state != block_state::inactive) continue;
      p.free += b.size;
      p.free_fragments.push_back(b.size);
    }
  }
  std::sort(p.free_fragments.rbegin(), p.free_fragments.rend());
  if (!p.free_fragments.empty()) p.largest_free = p.free_fragments.front();
  return p;
}

std::string describe(const pool_summary& p) {
  if (p.segments == 0) return fmt::format("{} pool: empty.", p.small ? "Small" : "Large");
  std::string list;
  for (std::size_t i = 0; i < p.free_fragments.size() && i < 8; ++i) {
    list += (i ? ", " : "") + format_size(p.free_fragments[i]);
  }
  if (p.free_fragments.size() > 8) list += fmt::format(" and {} more", p.free_fragments.size() - 8);
  return fmt::format("{} pool: {} segments, {} reserved, {} allocated, {} free in {} fragments{}.",
                     p.small ? "Small" : "Large", p.segments, format_size(p.reserved),
                     format_size(p.allocated), format_size(p.free), p.free_fragments.size(),
                     list.empty() ? "" : " (" + list + ")");
}

}  // namespace

oom_explanation explain_oom(const trace_model& model, std::optional<std::uint64_t> capacity) {
  oom_explanation x;
  x.capacity = capacity;
  replay_options base;
  base.config = model.recorded_config;
  base.config.policy = policy_kind::pytorch;
  base.timeline_points = 0;
  base.capacity = capacity;
  if (!model.ooms.empty()) {
    const recorded_oom& o = model.ooms.back();
    x.found = x.recorded = true;
    x.entry = o.entry;
    x.request = o.size;
    x.device_free = o.device_free;
    base.capacity.reset();  // the recording already ran out; replay its state as it was
  } else if (capacity) {
    const replay_result full = replay(model, base);
    if (!full.ooms.empty()) {
      x.found = true;
      x.entry = full.ooms.front().entry;
      x.request = full.ooms.front().size;
    }
  }
  if (!x.found) {
    x.text = capacity ? fmt::format("No OOM: the trace fits in {} with the recorded settings.",
                                    format_size(*capacity))
                      : "The trace records no OOM. Give --capacity to see where it would run out on a "
                        "smaller device.";
    return x;
  }
  replay_options upto = base;
  upto.stop_before_entry = x.entry;
  const replay_result state = replay(model, upto);
  const snapshot& s = *state.final_state;
  x.large = summarize(s, false);
  x.small = summarize(s, true);
  x.reserved = x.large.reserved + x.small.reserved;
  x.allocated = x.large.allocated + x.small.allocated;
  for (const snapshot_segment& seg : s.segments) {
    for (const snapshot_block& b : seg.blocks) {
      if (b.state == block_state::active_pending_free) x.pending_free += b.size;
    }
  }
  if (x.recorded && capacity && *capacity > x.reserved + x.device_free) {
    x.other_processes = *capacity - x.reserved - x.device_free;
  }
  if (!x.recorded) x.device_free = *capacity > x.reserved ? *capacity - x.reserved : 0;

  // What would have served it: every candidate on a device with what this process could use.
  const std::uint64_t usable = x.reserved + x.device_free;
  advise_options ao;
  ao.capacity = usable;
  const advice a = advise(model, default_candidates(model.recorded_config, true), ao);
  for (const ranked_result& r : a.ranked) {
    (r.oom ? x.would_not : x.would_serve).push_back(environment_line(r.settings));
  }

  const pool_summary& pool = x.request <= (1u << 20) ? x.small : x.large;
  std::string text = fmt::format(
      "{} at trace entry {}: the program asked for {}. At that moment {} was reserved and {} of it "
      "allocated, so {} was reserved but free; the driver reported {} free on the device.",
      x.recorded ? "Recorded OOM" : fmt::format("OOM on a {} device", format_size(*capacity)),
      x.entry, format_size(x.request), format_size(x.reserved), format_size(x.allocated),
      format_size(x.reserved - x.allocated), format_size(x.device_free));
  text += fmt::format(" The largest free block in the {} pool was {}: {} the request.",
                      pool.small ? "small" : "large", format_size(pool.largest_free),
                      pool.largest_free >= x.request ? "large enough for" : "smaller than");
  text += " " + describe(x.large) + " " + describe(x.small);
  text += fmt::format(" {} was held by blocks waiting for cross-stream frees.", format_size(x.pending_free));
  if (x.other_processes) {
    text += fmt::format(" Other processes (or the CUDA context) held {}.", format_size(*x.other_processes));
  }
  if (x.would_serve.empty()) {
    text += fmt::format(" No setting or policy completes the trace within {}: less memory must be live.",
                        format_size(usable));
  } else {
    text += fmt::format(" Replayed within the {} this process could use, these complete the trace "
                        "without an OOM: {}.", format_size(usable), fmt::join(x.would_serve, "; "));
  }
  x.text = std::move(text);
  return x;
}

}  // namespace keel::memory
