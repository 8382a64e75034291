#include "keel/serve/server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "scaler_model.hpp"

namespace keel::serve {
namespace {

using testing::g_loads;
using testing::g_runs;

class Server : public testing::repository_test {
 protected:
  static infer_request input(float a, float b) {
    tensor x(dtype::f32, {1, 2});
    x.values<float>()[0] = a;
    x.values<float>()[1] = b;
    return infer_request{{x}, 0, 0};
  }
  static std::vector<float> values(const tensor& t) {
    return {t.values<float>().begin(), t.values<float>().end()};
  }
  static std::vector<float> run(server& s, const std::string& m, std::int64_t version = -1) {
    return values(s.infer(m, version, input(1, 2)).outputs.get().at(0));
  }
  static const model_report& report(const std::vector<model_report>& all, const std::string& m,
                                    std::int64_t version = 1) {
    for (const model_report& r : all)
      if (r.name == m && (r.version == version || r.version == 0)) return r;
    throw std::runtime_error("no report for " + m);
  }
};

TEST_F(Server, ServesTheLatestVersionOrTheOneAsked) {
  model("twice", "scale 2", "version_policy { all { } }");
  write("twice/2/model.pt", "scale 3");
  auto s = start();
  EXPECT_EQ(run(*s, "twice"), (std::vector<float>{3, 6}));
  EXPECT_EQ(run(*s, "twice", 1), (std::vector<float>{2, 4}));
  EXPECT_EQ(s->versions("twice"), (std::vector<std::int64_t>{1, 2}));
  infer_handle latest = s->infer("twice", -1, input(1, 1));
  EXPECT_EQ(latest.version, 2);
  latest.outputs.get();
  EXPECT_THROW(run(*s, "twice", 7), model_not_found);
  EXPECT_THROW(run(*s, "nothing"), model_not_found);
  EXPECT_TRUE(s->ready("twice"));
  EXPECT_TRUE(s->ready("twice", 1));
  EXPECT_FALSE(s->ready("twice", 7));
  const auto all = s->models();
  EXPECT_EQ(report(all, "twice", 2).stats.success, 2u);
  EXPECT_EQ(report(all, "twice", 1).stats.success, 1u);
  EXPECT_GT(report(all, "twice", 1).last_inference_ms, 0u);
  EXPECT_EQ(report(all, "twice", 1).loads, 1u);
}

TEST_F(Server, BadInputIsRefusedAtSubmit) {
  model("m", "scale 2");
  auto s = start();
  tensor wrong(dtype::f32, {1, 3});
  EXPECT_THROW(s->infer("m", -1, infer_request{{wrong}, 0, 0}), invalid_argument);
  tensor ints(dtype::i64, {1, 2});
  EXPECT_THROW(s->infer("m", -1, infer_request{{ints}, 0, 0}), invalid_argument);
  EXPECT_EQ(run(*s, "m"), (std::vector<float>{2, 4}));
}

TEST_F(Server, AModelThatFailsToLoadLeavesTheOthersServing) {
  model("good", "scale 2");
  model("corrupt", "corrupt");
  write("broken/config.pbtxt", "name: \"broken\" bogus: 1\n");
  model("warm", "scale 1",
        "model_warmup { name: \"w\" batch_size: 1 inputs { key: \"x\" value: { data_type: "
        "TYPE_INT64 dims: 2 zero_data: true } } }");
  auto s = start();
  EXPECT_EQ(run(*s, "good"), (std::vector<float>{2, 4}));
  const auto all = s->models();
  EXPECT_EQ(report(all, "corrupt").state, model_state::unavailable);
  EXPECT_NE(report(all, "corrupt").reason.find("not a model"), std::string::npos);
  EXPECT_NE(report(all, "broken").reason.find("bogus"), std::string::npos);
  EXPECT_NE(report(all, "warm").reason.find("INT64, the input is FP32"), std::string::npos)
      << report(all, "warm").reason;
  EXPECT_THROW(run(*s, "corrupt"), request_rejected);
  EXPECT_THROW(run(*s, "broken"), request_rejected);  // known, but it cannot serve
  EXPECT_FALSE(s->ready("corrupt"));
}

TEST_F(Server, WarmupRunsEverySampleOnEveryInstance) {
  model("m", "scale 2",
        "instance_group { count: 3 kind: KIND_CPU }\n"
        "model_warmup { name: \"a\" batch_size: 2 count: 2 inputs { key: \"x\" value: { "
        "data_type: TYPE_FP32 dims: 2 random_data: true } } }");
  auto s = start();
  EXPECT_EQ(g_loads.load(), 3);
  EXPECT_EQ(g_runs.load(), 6);
}

TEST_F(Server, WarmupDataFromAFileMustFitTheInput) {
  const std::string warmup =
      "model_warmup { name: \"f\" batch_size: 1 inputs { key: \"x\" value: { data_type: "
      "TYPE_FP32 dims: 2 input_data_file: \"x.bin\" } } }";
  model("fits", "scale 2", warmup);
  write("fits/warmup/x.bin", std::string(8, '\0'));  // 1 x 2 floats
  model("short", "scale 2", warmup);
  write("short/warmup/x.bin", std::string(7, '\0'));
  model("missing", "scale 2", warmup);
  auto s = start();
  const auto all = s->models();
  EXPECT_EQ(report(all, "fits").state, model_state::ready) << report(all, "fits").reason;
  EXPECT_NE(report(all, "short").reason.find("7 bytes"), std::string::npos)
      << report(all, "short").reason;
  EXPECT_NE(report(all, "missing").reason.find("x.bin"), std::string::npos)
      << report(all, "missing").reason;
  EXPECT_EQ(g_runs.load(), 1);
}

TEST_F(Server, EnsembleRunsItsStepsAsADag) {
  // y = 2x; z = 3x (both from x); out = 5 * z: y and out are the outputs. Steps are listed
  // out of order: the DAG decides.
  model("two", "scale 2");
  model("three", "scale 3");
  model("five", "scale 5");
  write("pipe/config.pbtxt", R"(name: "pipe" platform: "ensemble" max_batch_size: 4
input { name: "x" data_type: TYPE_FP32 dims: 2 }
output { name: "y" data_type: TYPE_FP32 dims: 2 }
output { name: "out" data_type: TYPE_FP32 dims: 2 }
ensemble_scheduling {
  step { model_name: "five" model_version: -1 input_map { key: "x" value: "z" }
         output_map { key: "y" value: "out" } }
  step { model_name: "two" model_version: -1 input_map { key: "x" value: "x" }
         output_map { key: "y" value: "y" } }
  step { model_name: "three" model_version: -1 input_map { key: "x" value: "x" }
         output_map { key: "y" value: "z" } }
})");
  write("pipe/1/.keep", "");
  auto s = start();
  const auto all = s->models();
  ASSERT_EQ(report(all, "pipe").state, model_state::ready) << report(all, "pipe").reason;
  const std::vector<tensor> out = s->infer("pipe", -1, input(1, 2)).outputs.get();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{15, 30}));
  EXPECT_EQ(report(s->models(), "pipe").stats.success, 1u);
  EXPECT_TRUE(s->ready("pipe"));
  s->unload("three");
  EXPECT_FALSE(s->ready("pipe"));
  EXPECT_THROW(s->infer("pipe", -1, input(1, 2)).outputs.get(), request_rejected);
  EXPECT_EQ(report(s->models(), "pipe").stats.failure, 1u);
}

TEST_F(Server, EnsembleConfigurationsThatCannotRunAreUnavailable) {
  model("two", "scale 2");
  const std::string head = R"(platform: "ensemble" max_batch_size: 4
input { name: "x" data_type: TYPE_FP32 dims: 2 }
output { name: "y" data_type: TYPE_FP32 dims: 2 }
)";
  auto ensemble = [&](const std::string& name, const std::string& steps) {
    write(name + "/config.pbtxt",
          "name: \"" + name + "\" " + head + "ensemble_scheduling { " + steps + " }");
    write(name + "/1/.keep", "");
  };
  ensemble("cycle", R"(step { model_name: "two" input_map { key: "x" value: "a" }
                            output_map { key: "y" value: "b" } }
                     step { model_name: "two" input_map { key: "x" value: "b" }
                            output_map { key: "y" value: "a" } })");
  ensemble("nomodel", R"(step { model_name: "ghost" input_map { key: "x" value: "x" }
                              output_map { key: "y" value: "y" } })");
  ensemble("nooutput", R"(step { model_name: "two" input_map { key: "x" value: "x" }
                               output_map { key: "y" value: "q" } })");
  ensemble("badinput", R"(step { model_name: "two" input_map { key: "w" value: "x" }
                               output_map { key: "y" value: "y" } })");
  auto s = start();
  const auto all = s->models();
  EXPECT_NE(report(all, "cycle").reason.find("reads a tensor no step writes"), std::string::npos);
  EXPECT_NE(report(all, "nomodel").reason.find("'ghost'"), std::string::npos);
  EXPECT_NE(report(all, "nooutput").reason.find("output 'y'"), std::string::npos);
  EXPECT_NE(report(all, "badinput").reason.find("input 'x'"), std::string::npos);
  for (const char* m : {"cycle", "nomodel", "nooutput", "badinput"})
    EXPECT_EQ(report(all, m).state, model_state::unavailable) << m;
}

TEST_F(Server, MemoryBudgetEvictsTheLeastRecentlyUsedIdleModel) {
  model("a", "scale 2 bytes 100");
  model("b", "scale 3 bytes 100");
  model("c", "scale 5 bytes 100");
  model("huge", "scale 1 bytes 1000");
  auto s = start(250);
  // Loading c evicted a (the least recently used); huge cannot fit at all.
  auto all = s->models();
  EXPECT_FALSE(report(all, "a").resident);
  EXPECT_TRUE(report(all, "b").resident);
  EXPECT_TRUE(report(all, "c").resident);
  EXPECT_EQ(report(all, "a").evictions, 1u);
  EXPECT_EQ(report(all, "huge").state, model_state::unavailable);
  EXPECT_NE(report(all, "huge").reason.find("memory budget"), std::string::npos);
  EXPECT_EQ(s->resident_bytes(), 200u);
  EXPECT_TRUE(s->ready("a"));  // evicted models still serve
  // a reloads on its request and b, now the least recently used, makes room.
  run(*s, "c");
  EXPECT_EQ(run(*s, "a"), (std::vector<float>{2, 4}));
  all = s->models();
  EXPECT_TRUE(report(all, "a").resident);
  EXPECT_FALSE(report(all, "b").resident);
  EXPECT_EQ(report(all, "a").loads, 2u);
  EXPECT_EQ(report(all, "a").stats.success, 1u);
  EXPECT_LE(s->resident_bytes(), 250u);
}

TEST_F(Server, ABusyModelIsNotEvicted) {
  model("slow", "scale 2 bytes 100 delay_ms 200");
  model("other", "scale 3 bytes 100");
  auto s = start(150);  // one at a time
  auto busy = s->infer("slow", -1, input(1, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // other needs slow's room while slow runs: refused, and slow finishes.
  EXPECT_THROW(run(*s, "other"), request_rejected);
  EXPECT_EQ(values(busy.outputs.get()[0]), (std::vector<float>{2, 2}));
  EXPECT_EQ(run(*s, "other"), (std::vector<float>{3, 6}));
}

TEST_F(Server, UnloadAndLoadFollowTheRepository) {
  model("m", "scale 2");
  auto s = start();
  s->unload("m");
  EXPECT_EQ(report(s->models(), "m").state, model_state::unloaded);
  EXPECT_THROW(run(*s, "m"), request_rejected);
  write("m/1/model.pt", "scale 7");
  s->load("m");
  EXPECT_EQ(run(*s, "m"), (std::vector<float>{7, 14}));
  model("fresh", "scale 4");  // added after start
  s->load("fresh");
  EXPECT_EQ(run(*s, "fresh"), (std::vector<float>{4, 8}));
  write("m/1/model.pt", "corrupt");
  EXPECT_THROW(s->load("m"), keel::error);
  EXPECT_EQ(report(s->models(), "m").state, model_state::unavailable);
  EXPECT_THROW(s->load("../etc"), model_not_found);
  EXPECT_THROW(s->unload("ghost"), model_not_found);
}

TEST_F(Server, CancelAnswersAQueuedRequest) {
  model("slow", "scale 2 delay_ms 100");
  auto s = start();
  auto first = s->infer("slow", -1, input(1, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto second = s->infer("slow", -1, input(1, 1));
  EXPECT_TRUE(s->cancel(second));
  EXPECT_THROW(second.outputs.get(), request_rejected);
  EXPECT_EQ(values(first.outputs.get()[0]), (std::vector<float>{2, 2}));
  EXPECT_FALSE(s->cancel(first));
}

TEST_F(Server, DestructorAnswersEveryAcceptedRequest) {
  model("slow", "scale 2 delay_ms 5", "instance_group { count: 2 kind: KIND_CPU }");
  std::vector<infer_handle> handles;
  {
    auto s = start();
    for (int i = 0; i < 20; ++i) handles.push_back(s->infer("slow", -1, input(1, 1)));
  }
  for (infer_handle& h : handles) EXPECT_EQ(values(h.outputs.get()[0]), (std::vector<float>{2, 2}));
}

}  // namespace
}  // namespace keel::serve
