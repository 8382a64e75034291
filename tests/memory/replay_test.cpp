// Replay: start-state reconstruction, fidelity against PyTorch's recorded segment sequence,
// the keel policy's fragmentation, advise and explain — on synthesized traces and, when the
// shared data is present, on the real snapshots.
#include "keel/memory/replay.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "keel/core/error.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/explain.hpp"
#include "keel/memory/synth.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {
namespace {

const std::filesystem::path k_traces = std::filesystem::path(KEEL_SHARED_DIR) / "traces" / "pytorch";

replay_result run(const trace_model& m, std::string_view conf) {
  replay_options o;
  o.config = allocator_config::parse(conf, "test", m.recorded_config);
  return replay(m, o);
}

snapshot small_training_run() {
  synth_options o;
  o.steps = 3;
  o.layers = 4;
  o.hidden = 512;
  o.batch = 4;
  o.min_seq = 64;
  o.max_seq = 512;
  return synthesize(o);
}

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
  EXPECT_TRUE(m.notes.empty()) << m.notes.front();
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
  const trace_model m = build_trace_model(small_training_run(), 0);
  const replay_result unlimited = run(m, "");
  replay_options o;
  o.config = m.recorded_config;
  o.capacity = unlimited.peak_allocated / 2;
  const replay_result r = replay(m, o);
  ASSERT_FALSE(r.ooms.empty());
  EXPECT_EQ(r.ooms.front().message.rfind("CUDA out of memory. Tried to allocate", 0), 0u);
  const oom_explanation x = explain_oom(m, unlimited.peak_allocated / 2);
  EXPECT_TRUE(x.found);
  EXPECT_FALSE(x.recorded);
  EXPECT_GT(x.request, 0u);
  EXPECT_NE(x.text.find("No setting or policy completes the trace"), std::string::npos) << x.text;
  // With a little more than the peak demand, some setting fits where the default does not.
  const oom_explanation tight = explain_oom(m, unlimited.peak_allocated + unlimited.peak_allocated / 50);
  if (tight.found) EXPECT_FALSE(tight.would_serve.empty()) << tight.text;
}

TEST(Advise, RanksByPeakReservedWithTheRecordedBaseline) {
  const trace_model m = build_trace_model(small_training_run(), 0);
  const advice a = advise(m, default_candidates(m.recorded_config, false), {});
  ASSERT_TRUE(a.best && a.baseline && a.best_pytorch);
  for (std::size_t i = 1; i < a.ranked.size(); ++i) {
    EXPECT_LE(a.ranked[i - 1].result.peak_reserved, a.ranked[i].result.peak_reserved);
  }
  EXPECT_LE(a.ranked[*a.best].result.peak_reserved, a.ranked[*a.baseline].result.peak_reserved);
  EXPECT_EQ(environment_line(a.ranked[*a.best_pytorch].settings).rfind("PYTORCH_CUDA_ALLOC_CONF=", 0), 0u);
  candidate keel{allocator_config::parse("policy:keel"), std::nullopt, false};
  EXPECT_EQ(environment_line(keel), "KEEL_ALLOC_CONF=policy:keel");
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
    if (!std::filesystem::exists(k_traces)) GTEST_SKIP() << "shared traces not found at " << k_traces;
  }
};

TEST_F(SharedTraces, PyTorchPolicyReproducesEveryRecordedSegmentSequence) {
  // The five targets (two start empty, three begin with state to reconstruct), and the two
  // traces with empty_cache segment frees.
  for (const fidelity_case& c : {fidelity_case{"cs336a2kk-ctx128-fullstep", 783},
                                 fidelity_case{"cs336a2sm-tiny-backward", 9},
                                 fidelity_case{"decomfl-opt-zo-finetune", 61},
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
      const replay_result keel = run(m, "policy:keel");
      const replay_result expandable = run(m, "expandable_segments:True");
      const std::string name = entry.path().filename().string();
      if (keel.peak_allocated == 0) continue;  // nothing live on this device
      EXPECT_LE(keel.peak_reserved, expandable.peak_reserved) << name;
      EXPECT_LE(keel.fragmentation, 1.03) << name << " device " << device;
    }
  }
}

}  // namespace
}  // namespace keel::memory
