// analysis: fair comparisons (every candidate of a mode from the same start, savings against
// the recording), real OOMs on every device, explanations, recommendations a user can apply,
// and answers (not crashes) for any capacity — on synthesized traces and the shared snapshots.
#include "keel/memory/analysis.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/synth.hpp"
#include "synth_fixture.hpp"

namespace keel::memory {
namespace {

const std::filesystem::path k_traces =
    std::filesystem::path(KEEL_SHARED_DIR) / "traces" / "pytorch";

class SharedAnalysis : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(k_traces))
      GTEST_SKIP() << "shared traces not found at " << k_traces;
  }
  static snapshot load(const std::string& name) {
    return read_snapshot((k_traces / (name + ".pickle")).string());
  }
};

using test::small_training_run;

// Every saving is the recorded peak minus the candidate's own peak, and each candidate's peak
// is what a replay of it from the stated start gives.
void expect_fair(const snapshot& s, const analysis& a, const std::string& name) {
  for (const device_analysis& d : a.devices) {
    const trace_model model = build_trace_model(s, d.device);
    for (const mode_advice& m : d.adv.modes) {
      std::uint64_t start = 0;
      for (std::size_t i = 0; i < m.ranked.size(); ++i) {
        const ranked_result& r = m.ranked[i];
        if (i == 0) start = r.result.start_reserved;
        EXPECT_EQ(r.result.start, m.mode) << name;
        // The window starts every candidate in the recorded layout; a fresh process starts each
        // with the same live blocks, laid out as its own settings lay them out.
        if (m.mode == start_mode::window && !r.result.start_exceeds_capacity) {
          EXPECT_EQ(r.result.start_reserved, start) << name << " " << label(r.settings);
        }
        EXPECT_EQ(r.saving, static_cast<std::int64_t>(model.recorded_peak_reserved) -
                                static_cast<std::int64_t>(r.result.peak_reserved))
            << name;
        replay_options o;
        o.config = r.settings.config;
        o.memory_fraction = r.settings.memory_fraction;
        o.capacity = d.adv.capacity;
        o.start = m.mode;
        EXPECT_EQ(replay(model, o).peak_reserved, r.result.peak_reserved)
            << name << " " << label(r.settings);
      }
    }
  }
}

TEST(Analysis, SavingsAreAgainstTheRecordingFromOneStart) {
  const snapshot s = small_training_run();
  const analysis a = analyze(s, "synth", {});
  ASSERT_EQ(a.devices.size(), 1u);
  const device_analysis& d = a.devices.front();
  ASSERT_TRUE(d.adv.comparable);
  ASSERT_EQ(d.adv.modes.size(), 2u);
  ASSERT_TRUE(d.adv.fidelity());
  EXPECT_TRUE(d.adv.fidelity()->exact()) << d.adv.fidelity()->line();
  expect_fair(s, a, "synth");
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["schema"], "keel.mem.analysis/1");
  EXPECT_EQ(j["devices"][0]["modes"][0]["mode"], "window");
  EXPECT_EQ(j["devices"][0]["modes"][1]["mode"], "fresh");
}

TEST(Analysis, AStateOnlySnapshotCannotCompareSettings) {
  snapshot s = small_training_run();
  s.device_traces.clear();
  const analysis a = analyze(s, "state", {});
  const device_analysis& d = a.devices.front();
  EXPECT_FALSE(d.adv.comparable);
  EXPECT_TRUE(d.adv.modes.empty());
  EXPECT_FALSE(d.rec);
  EXPECT_NE(d.verdict.find("_record_memory_history(max_entries="), std::string::npos) << d.verdict;
  EXPECT_EQ(to_text(a).find("export PYTORCH_CUDA_ALLOC_CONF=\n"), std::string::npos);
}

TEST(Analysis, ACapacityBelowTheStartIsAnAnswer) {
  snapshot s = small_training_run();
  auto& trace = s.device_traces[0];
  trace.erase(trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(trace.size() / 2));
  analysis_options o;
  o.capacity = 1;
  const analysis a = analyze(s, "tiny", o);
  const device_analysis& d = a.devices.front();
  ASSERT_FALSE(d.adv.modes.empty());
  for (const ranked_result& r : d.adv.modes.front().ranked) {
    ASSERT_TRUE(r.result.start_exceeds_capacity);
    EXPECT_NE(r.result.start_exceeds_capacity->find("already holds"), std::string::npos);
    EXPECT_TRUE(r.oom);
  }
  EXPECT_FALSE(d.rec);
}

TEST(Analysis, AnUnknownDeviceIsBadInput) {
  EXPECT_THROW(analyze(small_training_run(), "synth", analysis_options{.device = 7}),
               invalid_argument);
}

TEST_F(SharedAnalysis, TheRealOomIsFoundAndIsNotFragmentation) {
  const snapshot s = load("codeloc-qwen3-dp-train-oom");
  const analysis a = analyze(s, "codeloc", {});
  ASSERT_EQ(a.devices.size(), 3u);  // devices 0, 1 and 2 have data; 3 has none
  const device_analysis& d1 = a.devices[1];
  ASSERT_EQ(d1.device, 1);
  // The window starts with nothing mapped and the replay reproduces the recording, OOM included.
  EXPECT_EQ(d1.start_reserved, 0u);
  ASSERT_TRUE(d1.adv.fidelity());
  EXPECT_TRUE(d1.adv.fidelity()->exact()) << d1.adv.fidelity()->line();
  EXPECT_EQ(d1.adv.fidelity()->reproduced_ooms, 1u);
  EXPECT_EQ(d1.adv.recorded_peak_reserved, 84'202'749'952u);
  ASSERT_TRUE(d1.adv.capacity);
  EXPECT_EQ(*d1.adv.capacity, 84'202'749'952u + 95'682'560u);  // mapped + device_free at the OOM
  ASSERT_TRUE(d1.oom.found && d1.oom.recorded);
  EXPECT_EQ(d1.oom.entry, 421u);
  EXPECT_EQ(d1.oom.request, 5'308'694'528u);
  ASSERT_TRUE(d1.oom.kind);
  EXPECT_EQ(*d1.oom.kind, oom_class::not_fragmentation);
  EXPECT_GT(d1.oom.must_go, 4u * k_gib);
  EXPECT_TRUE(d1.oom.would_serve.empty());
  // The setting the run died with is not among those that would have served it.
  const std::vector<std::string>& refused = d1.oom.would_not;
  EXPECT_NE(
      std::find(refused.begin(), refused.end(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
      refused.end());
  EXPECT_FALSE(d1.oom.live_sites.sites.empty());
  EXPECT_NE(d1.oom.text.find("not fragmentation"), std::string::npos) << d1.oom.text;
  // No setting serves the request, so nothing is recommended for device 1.
  EXPECT_FALSE(d1.rec) << d1.verdict;
  // The other devices record no OOM.
  EXPECT_FALSE(a.devices[0].oom.found);
  EXPECT_FALSE(a.devices[2].oom.found);
}

TEST_F(SharedAnalysis, TheOomObserversStateIsClassifiedFromItsBlocks) {
  const snapshot s = load("eqposteriors-oom-state");
  const analysis a = analyze(s, "eq", {});
  const oom_explanation& x = a.devices.front().oom;
  EXPECT_TRUE(x.found && x.state_only);
  ASSERT_TRUE(x.kind);
  EXPECT_EQ(*x.kind, oom_class::not_fragmentation);
  EXPECT_NE(x.text.find("request's size"), std::string::npos) << x.text;
}

TEST_F(SharedAnalysis, EveryTraceIsComparedFairly) {
  for (const auto& entry : std::filesystem::directory_iterator(k_traces)) {
    if (entry.path().extension() != ".pickle") continue;
    const snapshot s = read_snapshot(entry.path().string());
    const std::string name = entry.path().filename().string();
    const analysis a = analyze(s, name, {});
    expect_fair(s, a, name);
    for (const device_analysis& d : a.devices) {
      EXPECT_LE(d.notes.size(), 10u) << name;
      if (d.segment_events == 0 && d.adv.fidelity() == std::nullopt)
        EXPECT_FALSE(d.adv.comparable) << name;
      if (const std::optional<fidelity_report> f = d.adv.fidelity())
        EXPECT_TRUE(f->exact()) << name << ": " << f->line();
      if (d.rec) {
        EXPECT_GT(d.rec->saving, 0) << name;
        ASSERT_FALSE(d.rec->how.steps.empty()) << name;
        EXPECT_NE(d.rec->how.steps.front().text, "export PYTORCH_CUDA_ALLOC_CONF=") << name;
      }
    }
  }
}

}  // namespace
}  // namespace keel::memory
