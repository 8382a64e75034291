// Replay: start-state reconstruction, fidelity against PyTorch's recorded segment sequence,
// the keel policy's fragmentation, advise and explain — on synthesized traces and, when the
// shared data is present, on the real snapshots.
#include "keel/memory/replay.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <unordered_map>

#include "forwarding_backend.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/explain.hpp"
#include "keel/memory/sim_backend.hpp"
#include "keel/memory/synth.hpp"
#include "keel/memory/trace_model.hpp"
#include "synth_fixture.hpp"

namespace keel::memory {
namespace {

const std::filesystem::path k_traces =
    std::filesystem::path(KEEL_SHARED_DIR) / "traces" / "pytorch";

replay_result run(const trace_model& m, std::string_view conf,
                  start_mode start = start_mode::window) {
  replay_options o;
  o.config = allocator_config::parse(conf, "test", m.recorded_config);
  o.start = start;
  return replay(m, o);
}

using test::small_training_run;

TEST(Replay, ReproducesASynthesizedRecordingExactly) {
  const snapshot s = small_training_run();
  const trace_model m = build_trace_model(s, 0);
  EXPECT_TRUE(m.start.empty());  // recorded from an empty allocator
  const replay_result r = run(m, "");
  ASSERT_TRUE(r.fidelity);
  EXPECT_GT(r.fidelity->recorded_segments, 10u);
  EXPECT_EQ(r.fidelity->matched, r.fidelity->recorded_segments);
  EXPECT_FALSE(r.fidelity->first_mismatch);
  std::uint64_t reserved = 0;
  for (const snapshot_segment& seg : s.segments) reserved += seg.total_size;
  EXPECT_EQ(r.peak_reserved, reserved);  // nothing was ever freed back to the device
  EXPECT_GE(r.fragmentation, 1.0);
  EXPECT_EQ(r.internal_at_peak + r.external_at_peak + r.requested_at_peak, r.peak_reserved);
}

TEST(Replay, ReconstructsAWindowThatBeginsMidRun) {
  snapshot s = small_training_run();
  auto& trace = s.device_traces[0];
  // Keep only the second half of the trace, as a ring buffer that wrapped would.
  trace.erase(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(trace.size() / 2));
  const trace_model m = build_trace_model(s, 0);
  EXPECT_FALSE(m.start.empty());
  EXPECT_GT(m.start_requested, 0u);
  EXPECT_TRUE(m.notes.empty()) << m.notes.front().text;
  const replay_result r = run(m, "");
  EXPECT_TRUE(r.ooms.empty());
  if (r.fidelity) {
    EXPECT_EQ(r.fidelity->matched, r.fidelity->recorded_segments);
  }
}

TEST(Replay, KeelPolicyWastesLessThanPyTorch) {
  const trace_model m = build_trace_model(small_training_run(), 0);
  const replay_result pytorch = run(m, "");
  const replay_result expandable = run(m, "expandable_segments:True");
  const replay_result keel = run(m, "policy:keel");
  EXPECT_LE(keel.peak_reserved, expandable.peak_reserved);
  EXPECT_LT(keel.peak_reserved, pytorch.peak_reserved);
  EXPECT_EQ(keel.peak_allocated, pytorch.peak_allocated);  // the program's demand is fixed
  EXPECT_LE(keel.fragmentation, 1.03);
}

TEST(Replay, CapacityProducesOomsWithExplanations) {
  const snapshot s = small_training_run();
  const trace_model m = build_trace_model(s, 0);
  const replay_result unlimited = run(m, "");
  replay_options o;
  o.config = m.recorded_config;
  o.capacity = unlimited.peak_allocated / 2;
  const replay_result r = replay(m, o);
  ASSERT_EQ(r.ooms.size(), 1u);  // the replay stops at the first OOM
  EXPECT_TRUE(r.stopped_at_oom);
  EXPECT_FALSE(r.ooms.front().recorded);
  EXPECT_EQ(r.ooms.front().message.rfind("CUDA out of memory. Tried to allocate", 0), 0u);
  o.continue_after_oom = true;
  EXPECT_GT(replay(m, o).ooms.size(), 1u);
  const oom_explanation x = explain_oom(s, m, unlimited.peak_allocated / 2);
  EXPECT_TRUE(x.found);
  EXPECT_FALSE(x.recorded);
  EXPECT_GT(x.request, 0u);
  ASSERT_TRUE(x.kind);
  EXPECT_LE(x.live + x.request, *x.capacity + x.must_go) << x.text;
  if (*x.kind == oom_class::not_fragmentation) EXPECT_TRUE(x.would_serve.empty()) << x.text;
  // With a little more than the peak demand, some setting fits where the default does not.
  const oom_explanation tight =
      explain_oom(s, m, unlimited.peak_allocated + unlimited.peak_allocated / 50);
  if (tight.found && tight.kind == oom_class::fragmentation)
    EXPECT_FALSE(tight.would_serve.empty()) << tight.text;
}

TEST(Advise, RanksByPeakReservedWithTheRecordedBaseline) {
  const trace_model m = build_trace_model(small_training_run(), 0);
  const advice a = advise(m, default_candidates(m.recorded_config, false), {});
  ASSERT_EQ(a.modes.size(), 2u);
  for (const mode_advice& mode : a.modes) {
    ASSERT_TRUE(mode.best && mode.baseline && mode.best_pytorch && mode.best_keel);
    for (std::size_t i = 1; i < mode.ranked.size(); ++i) {
      EXPECT_LE(mode.ranked[i - 1].result.peak_reserved, mode.ranked[i].result.peak_reserved);
    }
    EXPECT_LE(mode.ranked[*mode.best].result.peak_reserved,
              mode.ranked[*mode.baseline].result.peak_reserved);
    EXPECT_EQ(environment_line(mode.ranked[*mode.best_pytorch].settings)
                  .rfind("PYTORCH_CUDA_ALLOC_CONF=", 0),
              0u);
    EXPECT_EQ(environment_line(mode.ranked[*mode.best_keel].settings),
              "KEEL_ALLOC_CONF=policy:keel");
  }
}

// A driver whose cudaMalloc addresses follow no order a model could infer: each segment gets
// its own 64 GiB slot, slots in a scrambled order (a test double over the sim backend).
class scrambled_driver final : public test::forwarding_backend {
 public:
  explicit scrambled_driver(std::uint32_t seed) : seed_(seed) {}

 private:
  std::string_view do_name() const noexcept override { return "scrambled"; }
  std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) override {
    const std::optional<std::uint64_t> inner = inner_.allocate_segment(bytes);
    if (!inner) return std::nullopt;
    const std::uint64_t slot = (next_++ * 2654435761u + seed_) % 4093u;  // a permutation of 0..4092
    const std::uint64_t address = 0x100000000000ull + (slot << 36);
    outer_to_inner_.emplace(address, *inner);
    return address;
  }
  void do_free_segment(std::uint64_t address, std::size_t bytes) noexcept override {
    const auto it = outer_to_inner_.find(address);
    inner_.free_segment(it->second, bytes);
    outer_to_inner_.erase(it);
  }
  bool do_supports_virtual_memory() const noexcept override { return true; }

  std::uint32_t seed_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> outer_to_inner_;
};

// A recording with many blocks of equal size in different segments (PyTorch's best fit breaks
// their ties by address), segment churn and empty_cache calls, on a driver with `device`'s
// address order.
snapshot tie_heavy_recording(backend& device, std::uint32_t seed, bool expandable) {
  caching_allocator a(
      device, allocator_config::parse(expandable ? "expandable_segments:True" : "", "test"));
  a.record_history(true);
  std::vector<std::uint64_t> live;
  std::uint32_t x = seed;
  const auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  const std::size_t sizes[] = {196u << 20, 392u << 20, 196u << 20,
                               6u << 20,   300u << 10, 392u << 20};
  for (int i = 0; i < 3000; ++i) {
    const std::uint32_t r = next() >> 8;
    if (live.empty() || r % 100 < 55) {
      live.push_back(a.allocate(sizes[(r >> 8) % 6] - (r % 7) * 512));
    } else {
      const std::size_t k = (r >> 4) % live.size();
      a.deallocate(live[k]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (r % 97 == 0) a.empty_cache();
  }
  return a.take_snapshot();
}

snapshot descending_recording(std::uint32_t seed, bool expandable) {
  sim_backend device(sim_backend::k_unlimited, 2u << 20,
                     address_plan({}, {}, address_order::descending));
  return tie_heavy_recording(device, seed, expandable);
}

TEST(Replay, InfersTheDriversAddressOrder) {
  for (std::uint32_t seed : {1u, 2u}) {
    EXPECT_EQ(build_trace_model(descending_recording(seed, false), 0).driver_order.order,
              address_order::descending);
    sim_backend up;
    EXPECT_EQ(build_trace_model(tie_heavy_recording(up, seed, false), 0).driver_order.order,
              address_order::ascending);
  }
}

TEST(Replay, GivesSegmentsTheRecordedAddresses) {
  // The scrambled driver's order cannot be modelled: only following the recording reproduces
  // which of several equal free blocks PyTorch's best fit took.
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    scrambled_driver device(seed);
    const trace_model m = build_trace_model(tie_heavy_recording(device, seed, false), 0);
    const replay_result r = run(m, "");
    ASSERT_TRUE(r.fidelity);
    EXPECT_TRUE(r.fidelity->exact()) << "seed " << seed << ": " << r.fidelity->line();
    EXPECT_EQ(r.fidelity->allocs_at_recorded_address, r.fidelity->allocs) << "seed " << seed;
  }
}

TEST(Replay, ReproducesDescendingDriversExactly) {
  for (bool expandable : {false, true}) {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
      const snapshot s = descending_recording(seed, expandable);
      const trace_model m = build_trace_model(s, 0);
      const replay_result r = run(m, "");
      ASSERT_TRUE(r.fidelity);
      EXPECT_TRUE(r.fidelity->exact()) << "seed " << seed << ": " << r.fidelity->line();
      EXPECT_EQ(r.fidelity->allocs_at_recorded_address, r.fidelity->allocs) << "seed " << seed;
      EXPECT_EQ(r.peak_reserved, m.recorded_peak_reserved);
    }
  }
}

TEST(Replay, AWindowThatBeginsMidRunWithExpandableSegments) {
  snapshot s = descending_recording(7, true);
  auto& trace = s.device_traces[0];
  trace.erase(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(trace.size() / 2));
  const trace_model m = build_trace_model(s, 0);
  EXPECT_TRUE(m.notes.empty()) << m.notes.front().text << " " << m.notes.front().example;
  ASSERT_FALSE(m.start.empty());
  for (const start_segment& seg : m.start) EXPECT_TRUE(seg.expandable);
  const replay_result r = run(m, "");
  ASSERT_TRUE(r.fidelity);
  EXPECT_TRUE(r.fidelity->exact()) << r.fidelity->line();
  EXPECT_EQ(r.fidelity->allocs_at_recorded_address, r.fidelity->allocs);
  // Without expandable segments the same start is imported as plain segments.
  const replay_result plain = run(m, "expandable_segments:False");
  EXPECT_TRUE(plain.completed());
}

TEST(Synth, IsDeterministicAndValidatesItsOptions) {
  synth_options o;
  o.kind = synth_kind::infer;
  o.steps = 2;
  o.layers = 2;
  o.new_tokens = 8;
  EXPECT_EQ(synthesize(o), synthesize(o));
  o.min_seq = 900;
  o.max_seq = 100;
  EXPECT_THROW(synthesize(o), invalid_argument);
}

// ---- the shared real snapshots ----

struct fidelity_case {
  const char* file;
  std::size_t segments;
};

class SharedTraces : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(k_traces))
      GTEST_SKIP() << "shared traces not found at " << k_traces;
  }
};

TEST_F(SharedTraces, PyTorchPolicyReproducesEveryRecordedSegmentSequence) {
  // The five targets (two start empty, three begin with state to reconstruct), and the two
  // traces with empty_cache segment frees.
  for (const fidelity_case& c :
       {fidelity_case{"cs336a2kk-ctx128-fullstep", 783},
        fidelity_case{"cs336a2sm-tiny-backward", 9}, fidelity_case{"decomfl-opt-zo-finetune", 61},
        fidelity_case{"eornn-cnn-counterfactuals", 7},
        fidelity_case{"ftcourse-llama-qlora-trainstep", 152},
        fidelity_case{"cs336a2kk-ctx256-forward-autocast", 598},
        fidelity_case{"selectn-llama-forward", 584}}) {
    const snapshot s = read_snapshot((k_traces / (std::string(c.file) + ".pickle")).string());
    const trace_model m = build_trace_model(s, 0);
    const replay_result r = run(m, "");
    ASSERT_TRUE(r.fidelity) << c.file;
    EXPECT_EQ(r.fidelity->recorded_segments, c.segments) << c.file;
    EXPECT_EQ(r.fidelity->matched, c.segments) << c.file;
    EXPECT_EQ(r.fidelity->replayed_segments, c.segments) << c.file;
    EXPECT_TRUE(r.ooms.empty()) << c.file;
  }
}

TEST_F(SharedTraces, PeaksMatchTheRecordedNumbers) {
  // Max allocated (requested bytes) and max reserved within the window, from SOURCES.md.
  const snapshot s = read_snapshot((k_traces / "cs336a2kk-ctx128-fullstep.pickle").string());
  const replay_result r = run(build_trace_model(s, 0), "");
  EXPECT_EQ(r.peak_allocated, 54'802'667'524u);
  EXPECT_EQ(r.peak_reserved, 61'111'009'280u);
  const snapshot churn = read_snapshot((k_traces / "selectn-llama-forward.pickle").string());
  const replay_result c = run(build_trace_model(churn, 0), "");
  EXPECT_EQ(c.peak_allocated, 20'802'383'104u);
  EXPECT_EQ(c.peak_reserved, 22'519'218'176u);
}

TEST_F(SharedTraces, KeelPolicyFragmentationOnEveryReplayableTrace) {
  for (const auto& entry : std::filesystem::directory_iterator(k_traces)) {
    if (entry.path().extension() != ".pickle") continue;
    const snapshot s = read_snapshot(entry.path().string());
    for (int device : devices_in(s)) {
      const trace_model m = build_trace_model(s, device);
      // From the same start (the live blocks of a fresh process) for both.
      const replay_result keel = run(m, "policy:keel", start_mode::fresh);
      const replay_result expandable = run(m, "expandable_segments:True", start_mode::fresh);
      const std::string name = entry.path().filename().string();
      if (keel.peak_allocated == 0) continue;  // nothing live on this device
      // keel's policy beats expandable segments from the same start on every trace but one:
      // ftcourse-llama-qlora-trainstep, where it peaks 18 MiB (0.3%) higher (docs/BENCHMARKS.md).
      EXPECT_LE(static_cast<double>(keel.peak_reserved),
                1.005 * static_cast<double>(expandable.peak_reserved))
          << name;
      EXPECT_LE(keel.fragmentation, 1.03) << name << " device " << device;
    }
  }
}

}  // namespace
}  // namespace keel::memory
