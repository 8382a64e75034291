#include "keel/memory/replay.hpp"
#include "keel/core/enum_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>

#include "keel/core/bytes.hpp"
#include "keel/core/check.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

// Keeps at most `limit` points by merging neighbours (each bucket keeps its maxima), so a
// plot of millions of events still shows every peak.
void compact(std::vector<timeline_point>& points, std::size_t limit) {
  if (limit == 0 || points.size() <= limit) return;
  const std::size_t per = (points.size() + limit - 1) / limit;
  std::vector<timeline_point> out;
  for (std::size_t i = 0; i < points.size(); i += per) {
    timeline_point p = points[i];
    for (std::size_t j = i; j < std::min(points.size(), i + per); ++j) {
      p.allocated = std::max(p.allocated, points[j].allocated);
      p.reserved = std::max(p.reserved, points[j].reserved);
    }
    out.push_back(p);
  }
  points.swap(out);
}

bool uses_expandable(const allocator_config& c) {
  return c.expandable_segments || c.policy == policy_kind::keel;
}

// Whether the allocator imports `seg` into a virtual range: an expandable run of whole pages
// (caching_allocator::import_segments holds any other run as a plain segment).
bool imported_as_range(const allocator_config& c, const start_segment& seg) {
  if (!seg.expandable || !uses_expandable(c)) return false;
  const std::uint64_t page = seg.is_small || c.policy == policy_kind::keel
                                 ? std::uint64_t{2} << 20
                                 : std::uint64_t{20} << 20;
  return (seg.address - seg.range_base) % page == 0 && seg.total_size % page == 0;
}

// Where the simulated driver puts segments: the recording's addresses while the replay's
// calls are the recording's (window mode), else the order inferred from the recording.
address_plan plan_for(const trace_model& model, const replay_options& options) {
  std::vector<driver_call> calls;
  if (options.start == start_mode::window) {
    // The start's segments as the allocator imports them: expandable runs become plain
    // segments when the allocator has no expandable segments.
    for (const start_segment& seg : model.start) {
      if (!imported_as_range(options.config, seg))
        calls.push_back({true, seg.address, seg.total_size});
    }
  }
  const std::vector<driver_call> window = model.window_calls();
  calls.insert(calls.end(), window.begin(), window.end());
  return address_plan(std::move(calls), model.range_bases(), model.driver_order.order);
}

// One replay in progress: a sim device, an allocator and where each recorded block went.
class replayer {
 public:
  replayer(const trace_model& model, const replay_options& options,
           std::optional<std::uint64_t> capacity)
      : model_(model),
        device_(capacity.value_or(sim_backend::k_unlimited), 2u << 20, plan_for(model, options)),
        allocator_(device_, options.config, model.device) {
    where_.reserve(model.ops.size() / 2 + 64);
    if (options.memory_fraction) allocator_.set_memory_fraction(*options.memory_fraction);
    try {
      if (options.start == start_mode::window) {
        adopt_layout();
      } else {
        allocate_live_blocks();
      }
    } catch (const out_of_memory&) {
      start_fits_ = false;
    }
  }

  void attach(std::function<void(const trace_entry&)> tracker) {
    allocator_.attach_trace_tracker(std::move(tracker));
  }

  // Runs one op; returns false when it ran out of memory.
  bool step(const replay_op& op) {
    switch (op.kind) {
      case op_kind::alloc:
        try {
          const std::uint64_t address = allocator_.allocate(op.size, op.stream);
          where_[op.addr] = {address, op.size};
          requested_live_ += op.size;
          ++allocs_;
          at_recorded_address_ += address == op.addr;
        } catch (const out_of_memory& e) {
          ooms_.push_back({op.entry, op.size, false, e.what()});
          return false;
        }
        break;
      case op_kind::free: {
        const auto it = where_.find(op.addr);
        if (it == where_.end()) break;  // its alloc failed, or the block was never placed
        allocator_.deallocate(it->second.address);
        // What its alloc asked for (a recorded free may name another size).
        requested_live_ -= std::min(requested_live_, it->second.requested);
        where_.erase(it);
        break;
      }
      case op_kind::empty_cache: allocator_.empty_cache(); break;
      case op_kind::oom:
        try {
          // Served: this setting avoids the recorded OOM. What the program did with the
          // block is not recorded, so it goes back at once.
          allocator_.deallocate(allocator_.allocate(op.size, op.stream));
          ++recorded_ooms_served_;
        } catch (const out_of_memory& e) {
          ooms_.push_back({op.entry, op.size, true, e.what()});
        }
        break;
    }
    return true;
  }

  caching_allocator& allocator() { return allocator_; }
  bool start_fits() const { return start_fits_; }
  std::uint64_t requested_live() const { return requested_live_; }
  std::vector<replay_oom>& ooms() { return ooms_; }
  std::size_t allocs() const { return allocs_; }
  std::size_t at_recorded_address() const { return at_recorded_address_; }
  std::size_t recorded_ooms_served() const { return recorded_ooms_served_; }

 private:
  void adopt_layout() {
    // Expandable ranges are numbered by their order in the model (their order of first use).
    std::unordered_map<std::uint64_t, std::size_t> range_number;
    for (std::size_t i = 0; i < model_.ranges.size(); ++i)
      range_number.emplace(model_.ranges[i].base, i);
    std::vector<imported_segment> import;
    for (const start_segment& seg : model_.start) {
      imported_segment is;
      is.total_size = seg.total_size;
      is.stream = seg.stream;
      is.is_small = seg.is_small;
      is.expandable = seg.expandable;
      if (seg.expandable) {
        is.range = range_number.at(seg.range_base);
        is.range_offset = seg.address - seg.range_base;
      }
      for (const start_block& b : seg.blocks) is.blocks.push_back({b.size, b.requested, b.live});
      import.push_back(std::move(is));
    }
    const std::vector<std::uint64_t> placed = allocator_.import_segments(import);
    // import_segments returns the live blocks' addresses in the order of the segments.
    std::size_t next = 0;
    for (const start_segment& seg : model_.start) {
      for (const start_block& b : seg.blocks) {
        if (b.live) where_[b.address] = {placed[next++], b.requested};
      }
    }
    requested_live_ = model_.start_requested;
  }

  void allocate_live_blocks() {
    for (const start_segment& seg : model_.start) {
      for (const start_block& b : seg.blocks) {
        if (!b.live) continue;
        where_[b.address] = {allocator_.allocate(b.requested, seg.stream), b.requested};
        requested_live_ += b.requested;
      }
    }
  }

  const trace_model& model_;
  sim_backend device_;
  caching_allocator allocator_;
  struct placement {
    std::uint64_t address = 0;    // where the replay put the block
    std::uint64_t requested = 0;  // what its allocation asked for
  };
  std::unordered_map<std::uint64_t, placement> where_;  // by recorded address
  bool start_fits_ = true;
  std::uint64_t requested_live_ = 0;
  std::vector<replay_oom> ooms_;
  std::size_t allocs_ = 0;
  std::size_t at_recorded_address_ = 0;
  std::size_t recorded_ooms_served_ = 0;
};

void compare_segments(fidelity_report& f, const trace_model& model,
                      const std::vector<std::uint64_t>& replayed) {
  const std::vector<segment_event> recorded = model.recorded_growth();
  f.recorded_segments = recorded.size();
  f.replayed_segments = replayed.size();
  const std::size_t n = std::max(f.recorded_segments, f.replayed_segments);
  for (std::size_t i = 0; i < n; ++i) {
    const bool have_recorded = i < f.recorded_segments;
    const bool have_replayed = i < f.replayed_segments;
    if (have_recorded && have_replayed && recorded[i].size == replayed[i]) {
      ++f.matched;
      continue;
    }
    segment_mismatch mm;
    mm.index = i;
    if (have_recorded) mm.recorded = recorded[i].size;
    if (have_replayed) mm.replayed = replayed[i];
    f.first_mismatch = mm;
    break;
  }
}

}  // namespace

namespace {
constexpr enum_entry<start_mode> k_start_entries[] = {{start_mode::window, "window"},
                                                      {start_mode::fresh, "fresh"},
                                                      {start_mode::window, "layout"},
                                                      {start_mode::fresh, "live"}};
constexpr enum_names<start_mode> k_start_names{"start", k_start_entries};
}  // namespace

std::string_view to_string(start_mode mode) noexcept { return k_start_names.name(mode); }

std::string_view describe(start_mode mode) noexcept {
  return mode == start_mode::window
             ? "this window (the recorded layout: what would have happened next)"
             : "a fresh process (the live blocks only: what a restart with this setting would do)";
}

start_mode parse_start_mode(std::string_view text) { return k_start_names.parse(text); }

bool fidelity_report::exact() const noexcept {
  return matched == recorded_segments && replayed_segments == recorded_segments &&
         replayed_peak_reserved == recorded_peak_reserved && reproduced_ooms == recorded_ooms;
}

std::string fidelity_report::line() const {
  if (exact()) {
    return fmt::format(
        "the replay reproduces all {} segment events{} and the recorded peak reserved ({}) to "
        "the byte",
        recorded_segments,
        recorded_ooms > 0
            ? fmt::format(" and {} OOM{}", recorded_ooms, recorded_ooms == 1 ? "" : "s")
            : "",
        format_size(recorded_peak_reserved));
  }
  std::string what;
  if (matched != recorded_segments || replayed_segments != recorded_segments) {
    what = fmt::format("{} of {} recorded segment events reproduced in order", matched,
                       recorded_segments);
    if (first_mismatch) {
      what +=
          fmt::format(" (#{}: recorded {}, replayed {})", first_mismatch->index,
                      first_mismatch->recorded ? format_size(*first_mismatch->recorded) : "none",
                      first_mismatch->replayed ? format_size(*first_mismatch->replayed) : "none");
    }
  } else {
    what = fmt::format("all {} segment events reproduced", recorded_segments);
  }
  if (replayed_peak_reserved != recorded_peak_reserved) {
    const auto diff = static_cast<std::int64_t>(replayed_peak_reserved - recorded_peak_reserved);
    what +=
        fmt::format("; peak reserved {} replayed vs {} recorded ({:+} bytes)",
                    format_size(replayed_peak_reserved), format_size(recorded_peak_reserved), diff);
  }
  if (reproduced_ooms != recorded_ooms) {
    what += fmt::format("; {} of {} recorded OOMs reproduced", reproduced_ooms, recorded_ooms);
  }
  return "the replay differs from the recording: " + what + "; savings are against the recording";
}

replay_result replay(const trace_model& model, const replay_options& options) {
  const auto started = std::chrono::steady_clock::now();
  replay_result r;
  r.policy = options.config.policy;
  r.conf = options.config.to_string();
  r.device = model.device;
  r.events = model.entries;
  r.start = options.start;
  r.capacity =
      options.capacity ? std::optional<std::uint64_t>(*options.capacity) : model.recorded_budget();
  replayer run(model, options, r.capacity);
  if (!run.start_fits()) {
    std::uint64_t live = 0;
    for (const start_segment& seg : model.start) {
      for (const start_block& b : seg.blocks) live += b.live ? b.size : 0;
    }
    r.start_exceeds_capacity =
        options.start == start_mode::window
            ? fmt::format(
                  "the snapshot already holds {} at the start of the window, more than the {} "
                  "capacity",
                  format_size(model.start_reserved), format_size(*r.capacity))
            : fmt::format("the {} live at the start of the window do not fit the {} capacity",
                          format_size(live), format_size(*r.capacity));
    r.start_reserved = model.start_reserved;
    r.peak_reserved = model.start_reserved;
    r.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    return r;
  }
  std::vector<std::uint64_t> replayed_segments;
  run.attach([&](const trace_entry& e) {
    if (e.action == trace_action::segment_alloc || e.action == trace_action::segment_map) {
      replayed_segments.push_back(e.size);
    }
  });

  memory_usage peak_usage = run.allocator().usage();
  r.start_reserved = peak_usage.reserved;
  r.peak_reserved = peak_usage.reserved;
  r.peak_allocated = run.requested_live();
  std::optional<std::size_t> peak_op;
  std::vector<timeline_point> timeline;
  if (options.timeline_points > 0) {
    timeline.reserve(model.ops.size() + 1);
    timeline.push_back({0, run.requested_live(), peak_usage.reserved});
  }
  r.ops = model.ops.size();
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    if (options.stop_before_entry && model.ops[i].entry >= *options.stop_before_entry) {
      r.ops = i;
      break;
    }
    const bool ok = run.step(model.ops[i]);
    const memory_usage u = run.allocator().usage();
    r.peak_allocated = std::max(r.peak_allocated, run.requested_live());
    if (u.reserved > r.peak_reserved) {
      r.peak_reserved = u.reserved;
      r.peak_entry = model.ops[i].entry;
      peak_usage = u;
      peak_op = i;
    }
    if (options.timeline_points > 0)
      timeline.push_back({model.ops[i].entry, run.requested_live(), u.reserved});
    if (!ok && !options.continue_after_oom) {
      r.stopped_at_oom = true;
      r.ops = i + 1;
      break;
    }
  }
  r.fragmentation = r.peak_allocated > 0 ? static_cast<double>(r.peak_reserved) /
                                               static_cast<double>(r.peak_allocated)
                                         : 0.0;
  r.requested_at_peak = peak_usage.requested;
  KEEL_DCHECK(
      peak_usage.requested <= peak_usage.allocated && peak_usage.allocated <= peak_usage.reserved,
      "usage at the peak: requested {} allocated {} reserved {}", peak_usage.requested,
      peak_usage.allocated, peak_usage.reserved);
  r.internal_at_peak = peak_usage.allocated - std::min(peak_usage.allocated, peak_usage.requested);
  r.external_at_peak = peak_usage.reserved - std::min(peak_usage.reserved, peak_usage.allocated);
  const memory_stats stats = run.allocator().stats();
  r.device_mallocs = stats.num_device_alloc;
  r.retries = stats.num_alloc_retries;
  r.ooms = std::move(run.ooms());
  r.recorded_ooms_served = run.recorded_ooms_served();
  compact(timeline, options.timeline_points);
  r.timeline = std::move(timeline);
  if (options.start == start_mode::window &&
      (!model.segment_events.empty() || !model.ooms.empty())) {
    fidelity_report f;
    compare_segments(f, model, replayed_segments);
    f.recorded_peak_reserved = model.recorded_peak_reserved;
    f.replayed_peak_reserved = r.peak_reserved;
    f.recorded_ooms = model.ooms.size();
    f.reproduced_ooms = static_cast<std::size_t>(std::count_if(
        r.ooms.begin(), r.ooms.end(), [](const replay_oom& o) { return o.recorded; }));
    f.allocs = run.allocs();
    f.allocs_at_recorded_address = run.at_recorded_address();
    r.fidelity = f;
  }
  if (options.stop_before_entry) r.final_state = run.allocator().take_snapshot();
  if (options.snapshot_at_peak) {
    // Replaying is cheap: run again up to the peak and keep the allocator's state there.
    replayer again(model, options, r.capacity);
    if (peak_op) {
      for (std::size_t i = 0; i <= *peak_op; ++i) again.step(model.ops[i]);
    }
    r.peak_state = again.allocator().take_snapshot();
  }
  r.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace keel::memory
