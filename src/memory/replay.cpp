#include "keel/memory/replay.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>

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

// One replay in progress: a sim device, an allocator and where each recorded block went.
class replayer {
 public:
  replayer(const trace_model& model, const replay_options& options, start_mode start)
      : model_(model),
        device_(options.capacity.value_or(sim_backend::k_unlimited)),
        allocator_(device_, options.config, model.device) {
    where_.reserve(model.ops.size() / 2 + 64);
    requested_live_ = model.start_requested;
    if (options.memory_fraction) allocator_.set_memory_fraction(*options.memory_fraction);
    if (start == start_mode::layout) {
      adopt_layout();
    } else {
      allocate_live_blocks();
    }
  }

  void attach(std::function<void(const trace_entry&)> tracker) {
    allocator_.attach_trace_tracker(std::move(tracker));
  }

  void step(const replay_op& op) {
    switch (op.kind) {
      case op_kind::alloc:
        try {
          where_[op.addr] = allocator_.allocate(op.size, op.stream);
          requested_live_ += op.size;
        } catch (const out_of_memory& e) {
          ooms_.push_back({op.entry, op.size, e.what()});
        }
        break;
      case op_kind::free: {
        const auto it = where_.find(op.addr);
        if (it == where_.end()) break;  // its alloc failed, or the block was never placed
        allocator_.deallocate(it->second);
        where_.erase(it);
        requested_live_ -= op.size;
        break;
      }
      case op_kind::empty_cache:
        allocator_.empty_cache();
        break;
    }
  }

  caching_allocator& allocator() { return allocator_; }
  std::uint64_t requested_live() const { return requested_live_; }
  std::vector<replay_oom>& ooms() { return ooms_; }

 private:
  void adopt_layout() {
    std::vector<imported_segment> import;
    for (const start_segment& seg : model_.start) {
      imported_segment is;
      is.total_size = seg.total_size;
      is.stream = seg.stream;
      is.is_small = seg.is_small;
      for (const start_block& b : seg.blocks) is.blocks.push_back({b.size, b.requested, b.live});
      import.push_back(std::move(is));
    }
    const std::vector<std::uint64_t> placed = allocator_.import_segments(import);
    std::size_t next = 0;
    for (const start_segment& seg : model_.start) {
      for (const start_block& b : seg.blocks) {
        if (b.live) where_[b.address] = placed[next++];
      }
    }
  }

  void allocate_live_blocks() {
    for (const start_segment& seg : model_.start) {
      for (const start_block& b : seg.blocks) {
        if (!b.live) continue;
        try {
          where_[b.address] = allocator_.allocate(b.requested, seg.stream);
        } catch (const out_of_memory& e) {
          ooms_.push_back({0, b.requested, e.what()});
          requested_live_ -= b.requested;
        }
      }
    }
  }

  const trace_model& model_;
  sim_backend device_;
  caching_allocator allocator_;
  std::unordered_map<std::uint64_t, std::uint64_t> where_;  // recorded -> replayed address
  std::uint64_t requested_live_ = 0;
  std::vector<replay_oom> ooms_;
};

fidelity_report compare_segments(const trace_model& model, const std::vector<std::uint64_t>& replayed) {
  fidelity_report f;
  f.recorded_segments = model.recorded_segments.size();
  f.replayed_segments = replayed.size();
  const std::size_t n = std::max(f.recorded_segments, f.replayed_segments);
  for (std::size_t i = 0; i < n; ++i) {
    const bool have_recorded = i < f.recorded_segments;
    const bool have_replayed = i < f.replayed_segments;
    if (have_recorded && have_replayed && model.recorded_segments[i].size == replayed[i]) {
      ++f.matched;
      continue;
    }
    segment_mismatch mm;
    mm.index = i;
    if (have_recorded) mm.recorded = model.recorded_segments[i].size;
    if (have_replayed) mm.replayed = replayed[i];
    f.first_mismatch = mm;
    break;
  }
  return f;
}

}  // namespace

replay_result replay(const trace_model& model, const replay_options& options) {
  const auto started = std::chrono::steady_clock::now();
  replay_result r;
  r.policy = options.config.policy;
  r.conf = options.config.to_string();
  r.device = model.device;
  r.events = model.entries;
  r.ops = model.ops.size();
  r.start = options.start.value_or(options.config.policy == policy_kind::pytorch ? start_mode::layout
                                                                                  : start_mode::live);
  replayer run(model, options, r.start);
  std::vector<std::uint64_t> replayed_segments;
  run.attach([&](const trace_entry& e) {
    if (e.action == trace_action::segment_alloc || e.action == trace_action::segment_map) {
      replayed_segments.push_back(e.size);
    }
  });

  memory_usage peak_usage = run.allocator().usage();
  r.peak_reserved = peak_usage.reserved;
  r.peak_allocated = run.requested_live();
  std::optional<std::size_t> peak_op;
  std::vector<timeline_point> timeline;
  if (options.timeline_points > 0) {
    timeline.reserve(model.ops.size() + 1);
    timeline.push_back({0, run.requested_live(), peak_usage.reserved});
  }
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    if (options.stop_before_entry && model.ops[i].entry >= *options.stop_before_entry) {
      r.ops = i;
      break;
    }
    run.step(model.ops[i]);
    const memory_usage u = run.allocator().usage();
    r.peak_allocated = std::max(r.peak_allocated, run.requested_live());
    if (u.reserved > r.peak_reserved) {
      r.peak_reserved = u.reserved;
      peak_usage = u;
      peak_op = i;
    }
    if (options.timeline_points > 0) timeline.push_back({model.ops[i].entry, run.requested_live(), u.reserved});
  }
  r.fragmentation = r.peak_allocated > 0 ? static_cast<double>(r.peak_reserved) /
                                               static_cast<double>(r.peak_allocated)
                                         : 0.0;
  r.requested_at_peak = peak_usage.requested;
  r.internal_at_peak = peak_usage.allocated - peak_usage.requested;
  r.external_at_peak = peak_usage.reserved - peak_usage.allocated;
  const memory_stats stats = run.allocator().stats();
  r.device_mallocs = stats.num_device_alloc;
  r.retries = stats.num_alloc_retries;
  r.ooms = std::move(run.ooms());
  compact(timeline, options.timeline_points);
  r.timeline = std::move(timeline);
  if (options.config.policy == policy_kind::pytorch && !model.recorded_segments.empty()) {
    r.fidelity = compare_segments(model, replayed_segments);
  }
  if (options.stop_before_entry) r.final_state = run.allocator().take_snapshot();
  if (options.snapshot_at_peak) {
    // Replaying is cheap: run again up to the peak and keep the allocator's state there.
    replayer again(model, options, r.start);
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
