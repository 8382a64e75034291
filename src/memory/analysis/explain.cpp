#include "keel/memory/explain.hpp"
#include "keel/core/enum_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "keel/core/bytes.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/replay.hpp"

namespace keel::memory {
namespace {

constexpr std::size_t k_sites_shown = 5;

bool private_pool(const snapshot_segment& seg) {
  return seg.pool_id != std::pair<std::int64_t, std::int64_t>{0, 0};
}

pool_summary summarize(const snapshot& state, int device, bool small) {
  pool_summary p;
  p.small = small;
  for (const snapshot_segment& seg : state.segments) {
    if (seg.device != device || seg.is_large == small) continue;
    ++p.segments;
    p.reserved += seg.total_size;
    p.allocated += seg.allocated_size;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state == block_state::inactive) add_free_fragment(p, b.size);
    }
  }
  return p;
}

std::string sites_text(const callsite_summary& s) {
  std::string out = fmt::format("({}) ", category_line(s));
  for (std::size_t i = 0; i < s.sites.size() && i < k_sites_shown; ++i) {
    const callsite& c = s.sites[i];
    out +=
        fmt::format("{}{} ({}, {} allocation{}, {})", i ? "; " : "", c.site, format_size(c.bytes),
                    c.count, c.count == 1 ? "" : "s", to_string(c.category));
  }
  if (s.total_rows > k_sites_shown)
    out += fmt::format("; and {} more call sites", s.total_rows - k_sites_shown);
  return out;
}

// Which candidates serve the failing request inside the budget; returns the fidelity line
// when the recorded settings' replay differs from the recording ("" when it does not).
std::string find_settings(oom_explanation& x, const trace_model& model) {
  advise_options ao;
  ao.capacity = x.budget;
  ao.modes = {start_mode::window};
  const advice a = advise(model, default_candidates(model.recorded_config, true), ao);
  if (a.modes.empty()) return {};
  for (const ranked_result& r : a.modes.front().ranked) {
    // A recorded OOM's request is served when the replay serves it; a capacity's first OOM
    // when the candidate gets past that entry (it may run out later: the line says so).
    bool serves = r.result.avoids_recorded_ooms();
    std::string line = environment_line(r.settings);
    if (!x.recorded && !r.result.start_exceeds_capacity && !r.result.ooms.empty() &&
        r.result.ooms.front().entry > x.entry) {
      serves = true;
      line += fmt::format(" (runs out later, at entry {})", r.result.ooms.front().entry);
    }
    (serves ? x.would_serve : x.would_not).push_back(std::move(line));
  }
  const std::optional<fidelity_report> f = a.fidelity();
  return f && !f->exact() ? f->line() : std::string();
}

void classify(oom_explanation& x, std::uint64_t request) {
  if (x.live + request > x.budget) {
    x.kind = oom_class::not_fragmentation;
    x.must_go = x.live + request - x.budget;
  } else if (x.live + x.pending_free + request > x.budget) {
    x.kind = oom_class::pending_frees;
  } else if (x.private_pool_free + x.device_free >= request) {
    x.kind = oom_class::caching;
  } else {
    x.kind = oom_class::fragmentation;
  }
}

std::string verdict(const oom_explanation& x, std::uint64_t request) {
  switch (*x.kind) {
    case oom_class::not_fragmentation:
      return fmt::format(
          "This was not fragmentation: {} was live and {} + the {} request is {}, more than the "
          "{} this process could use. No allocator setting can serve it: at least {} of live "
          "memory must go (a smaller batch or sequence, activation checkpointing, offloading, or "
          "fewer copies of the model on this device).",
          format_size(x.live), format_size(x.live), format_size(request),
          format_size(x.live + request), format_size(x.budget), format_size(x.must_go));
    case oom_class::pending_frees:
      return fmt::format(
          "Cross-stream frees held the memory: {} of freed blocks still waited for work on other "
          "streams (Tensor.record_stream or a tensor used on a side stream); without them the "
          "request fits. Synchronize those streams, or free such tensors after their last use on "
          "the other stream.",
          format_size(x.pending_free));
    case oom_class::caching:
      return fmt::format(
          "Caching held the memory: {} was cached free in private pools (CUDA graphs, MemPools) "
          "that PyTorch's OOM path does not release; releasing them (delete the graph or pool, "
          "then torch.cuda.empty_cache()) serves the request.",
          format_size(x.private_pool_free));
    case oom_class::fragmentation:
      return fmt::format(
          "This was fragmentation: {} live + the {} request fit in the {} this process could "
          "use, but the free memory was in pieces.",
          format_size(x.live), format_size(request), format_size(x.budget));
  }
  return {};
}

oom_explanation explain_state_only(const snapshot& snap, const trace_model& model,
                                   const callsite_options& sites) {
  oom_explanation x;
  x.device = model.device;
  x.found = true;
  x.state_only = true;
  x.large = summarize(snap, model.device, false);
  x.small = summarize(snap, model.device, true);
  x.reserved = x.large.reserved + x.small.reserved;
  x.allocated = x.large.allocated + x.small.allocated;
  for (const snapshot_segment& seg : snap.segments) {
    if (seg.device != model.device) continue;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state == block_state::active_pending_free) x.pending_free += b.size;
      if (b.state == block_state::inactive && private_pool(seg)) x.private_pool_free += b.size;
    }
  }
  const std::vector<live_allocation> live = live_allocations(snap, model.device);
  for (const live_allocation& a : live) x.live += a.bytes;
  x.live -= std::min(x.live, x.pending_free);
  x.live_sites = summarize_callsites(live, sites);
  const std::uint64_t free = x.large.free + x.small.free;
  const std::uint64_t largest = std::max(x.large.largest_free, x.small.largest_free);
  const double free_share =
      x.reserved > 0 ? static_cast<double>(free) / static_cast<double>(x.reserved) : 0.0;
  if (free_share < 0.05) {
    x.kind = oom_class::not_fragmentation;
  } else if (x.private_pool_free * 2 >= free) {
    x.kind = oom_class::caching;
  } else if (x.pending_free * 2 >= free) {
    x.kind = oom_class::pending_frees;
  } else {
    x.kind = oom_class::fragmentation;
  }
  std::string text = fmt::format(
      "Device {}: this snapshot holds the allocator's state and no trace, so the failing "
      "request's size and the driver's free memory are not in it. If it was dumped at an OOM "
      "(for example by an OOM observer's _dump_snapshot): {} was live in {} reserved; {} was "
      "free in the cache ({:.1f}% of reserved), the largest free block {}.",
      model.device, format_size(x.live), format_size(x.reserved), format_size(free),
      100.0 * free_share, format_size(largest));
  text += fmt::format(
      " A request larger than {} plus the device's free memory was not fragmentation: no setting "
      "could have served it; one between {} and that bound could have been.",
      format_size(free), format_size(largest));
  switch (*x.kind) {
    case oom_class::not_fragmentation:
      text +=
          " With so little free in the cache, this was most likely not fragmentation: less "
          "memory must be live.";
      break;
    case oom_class::caching:
      text += fmt::format(
          " {} of the free memory sat in private pools (CUDA graphs, MemPools), which the OOM "
          "path does not release.",
          format_size(x.private_pool_free));
      break;
    case oom_class::pending_frees:
      text += fmt::format(" {} was held by blocks waiting for cross-stream frees.",
                          format_size(x.pending_free));
      break;
    case oom_class::fragmentation:
      text +=
          " A large share of the reservation was free but in pieces: fragmentation is likely; "
          "replaying a trace recorded up to the OOM would name the settings that serve it.";
      break;
  }
  text += " " + describe(x.large) + " " + describe(x.small);
  if (!x.live_sites.sites.empty())
    text += " Live memory by call site: " + sites_text(x.live_sites) + ".";
  x.text = std::move(text);
  return x;
}

}  // namespace

namespace {
constexpr enum_entry<oom_class> k_oom_class_entries[] = {
    {oom_class::not_fragmentation, "not_fragmentation"},
    {oom_class::pending_frees, "pending_frees"},
    {oom_class::caching, "caching"},
    {oom_class::fragmentation, "fragmentation"},
};
constexpr enum_names<oom_class> k_oom_class_names{"oom class", k_oom_class_entries,
                                                  name_case::exact, "unknown"};
}  // namespace

std::string_view to_string(oom_class c) noexcept { return k_oom_class_names.name(c); }

oom_explanation explain_oom(const snapshot& snap, const trace_model& model,
                            std::optional<std::uint64_t> capacity, const callsite_options& sites) {
  oom_explanation x;
  x.device = model.device;
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
    x.budget = o.budget();
    base.capacity = x.budget;
    if (capacity && *capacity > x.budget) x.other_processes = *capacity - x.budget;
  } else if (capacity) {
    const replay_result full = replay(model, base);
    if (full.start_exceeds_capacity) {
      x.text = fmt::format("Device {}: {}; every allocation of the window would fail.",
                           model.device, *full.start_exceeds_capacity);
      return x;
    }
    if (!full.ooms.empty()) {
      x.found = true;
      x.entry = full.ooms.front().entry;
      x.request = model.recorded_config.round_size(full.ooms.front().size);
      x.budget = *capacity;
    }
  } else if (model.entries == 0) {
    return explain_state_only(snap, model, sites);
  }
  if (!x.found) {
    x.text = capacity ? fmt::format(
                            "Device {}: no OOM; the trace fits in {} with the recorded settings.",
                            model.device, format_size(*capacity))
                      : fmt::format(
                            "Device {}: the trace records no OOM. Give --capacity to see where "
                            "it would run out on a smaller device.",
                            model.device);
    return x;
  }

  // The allocator's state just before the failing request, and what the program held.
  replay_options upto = base;
  upto.stop_before_entry = x.entry;
  const replay_result state = replay(model, upto);
  const snapshot& s = *state.final_state;
  x.large = summarize(s, model.device, false);
  x.small = summarize(s, model.device, true);
  x.reserved = x.large.reserved + x.small.reserved;
  x.allocated = x.large.allocated + x.small.allocated;
  if (x.recorded) {
    x.reserved = model.ooms.back().reserved;  // the recording's own number
  } else {
    x.device_free = x.budget > x.reserved ? x.budget - x.reserved : 0;
  }
  const live_state held = model.live_at(x.entry);
  x.live = held.live_bytes;
  x.pending_free = held.pending_bytes;
  x.live_sites = summarize_callsites(held.live, sites);
  classify(x, x.request);
  const std::string fidelity = find_settings(x, model);

  const pool_summary& pool = x.request <= (1u << 20) ? x.small : x.large;
  std::string text = fmt::format(
      "{} on device {} at trace entry {}: the program asked for {}. This process could use {} "
      "({} {} and {} free on the device); {} was live.",
      x.recorded ? "Recorded OOM" : fmt::format("OOM on a {} device", format_size(*capacity)),
      model.device, x.entry, format_size(x.request), format_size(x.budget), format_size(x.reserved),
      x.recorded ? "mapped by PyTorch" : "reserved", format_size(x.device_free),
      format_size(x.live));
  text += " " + verdict(x, x.request);
  if (*x.kind != oom_class::not_fragmentation) {
    text += fmt::format(" The largest free block in the {} pool was {}: {} the request.",
                        pool.small ? "small" : "large", format_size(pool.largest_free),
                        pool.largest_free >= x.request ? "large enough for" : "smaller than");
  }
  text += " " + describe(x.large) + " " + describe(x.small);
  if (x.pending_free > 0 && *x.kind != oom_class::pending_frees) {
    text += fmt::format(" {} was held by blocks waiting for cross-stream frees.",
                        format_size(x.pending_free));
  }
  if (x.other_processes) {
    text += fmt::format(" Other processes (or the CUDA context) held {}.",
                        format_size(*x.other_processes));
  }
  if (x.would_serve.empty()) {
    text += fmt::format(" Replayed within {}, no setting or policy serves the request.",
                        format_size(x.budget));
  } else {
    text += fmt::format(" Replayed within {}, these serve it: {}.", format_size(x.budget),
                        fmt::join(x.would_serve, "; "));
  }
  if (!x.live_sites.sites.empty())
    text += " Live memory by call site: " + sites_text(x.live_sites) + ".";
  if (!fidelity.empty()) text += " Note: " + fidelity + ".";
  x.text = std::move(text);
  return x;
}

}  // namespace keel::memory
