// recipe: every candidate the advisor tries yields lines a user can paste, and the shell line
// reads back, with PyTorch's strict grammar, as the very config that was replayed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/recipe.hpp"

namespace keel::memory {
namespace {

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// The value of `export NAME=value` as the shell reads it (single quotes removed).
std::optional<std::string> exported(const recipe& r, std::string_view name) {
  const std::string prefix = "export " + std::string(name) + "=";
  for (const recipe_step& s : r.steps) {
    if (s.kind != recipe_step::kind::shell || s.text.rfind(prefix, 0) != 0) continue;
    std::string v = s.text.substr(prefix.size());
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
    return v;
  }
  return std::nullopt;
}

bool has_step(const recipe& r, enum recipe_step::kind kind, std::string_view text) {
  for (const recipe_step& s : r.steps) {
    if (s.kind == kind && contains(s.text, text)) return true;
  }
  return false;
}

std::vector<allocator_config> recorded_settings() {
  return {allocator_config{},
          allocator_config::parse_pytorch(
              "expandable_segments:True,roundup_power2_divisions:[256:1,>:4]")
              .config,
          allocator_config::parse_pytorch("max_split_size_mb:512,garbage_collection_threshold:0.7")
              .config};
}

TEST(Recipe, EveryAdvisorCandidateReadsBackAsTheSameConfig) {
  for (const allocator_config& recorded : recorded_settings()) {
    for (const candidate& c : default_candidates(recorded, true)) {
      const recipe r = recipe_for(c.config, c.memory_fraction);
      SCOPED_TRACE(c.config.to_string());
      EXPECT_FALSE(r.title.empty());
      EXPECT_FALSE(r.costs.empty());
      ASSERT_FALSE(r.steps.empty());
      for (const recipe_step& s : r.steps) {
        EXPECT_FALSE(s.text.empty());
        EXPECT_FALSE(contains(s.text, "PYTORCH_CUDA_ALLOC_CONF=''"));
        EXPECT_FALSE(s.text.size() >= 1 && s.text.back() == '=') << s.text;
      }
      if (c.config.policy == policy_kind::keel) {
        const auto keel_line = exported(r, "KEEL_ALLOC_CONF");
        ASSERT_TRUE(keel_line);
        EXPECT_EQ(allocator_config::parse(*keel_line, "KEEL_ALLOC_CONF"), c.config);
        EXPECT_TRUE(has_step(r, recipe_step::kind::shell, "unset PYTORCH_CUDA_ALLOC_CONF"));
        continue;
      }
      const auto line = exported(r, "PYTORCH_CUDA_ALLOC_CONF");
      if (c.config == allocator_config{}) {
        EXPECT_FALSE(line);
        EXPECT_TRUE(has_step(r, recipe_step::kind::shell, "unset PYTORCH_CUDA_ALLOC_CONF"));
        continue;
      }
      ASSERT_TRUE(line);
      // Strict PyTorch grammar, both eras: policy refused, True/False exact, PyTorch's limits.
      for (const pytorch_grammar g : {pytorch_grammar::accelerator_allocator_config,
                                      pytorch_grammar::cuda_allocator_config}) {
        const parsed_allocator_config back = allocator_config::parse_pytorch(*line, g);
        EXPECT_EQ(back.config, c.config) << *line << " " << to_string(g);
        EXPECT_TRUE(back.ignored_keys.empty());
      }
      if (c.memory_fraction || c.config.garbage_collection_threshold > 0) {
        EXPECT_TRUE(has_step(r, recipe_step::kind::python,
                             "torch.cuda.set_per_process_memory_fraction(1.0)"))
            << to_json(r).dump(2);
      }
    }
  }
}

TEST(Recipe, DefaultsAreAnUnsetNeverAnEmptyValue) {
  const recipe r = recipe_for(allocator_config{}, std::nullopt);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].kind, recipe_step::kind::shell);
  EXPECT_EQ(r.steps[0].text, "unset PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_TRUE(contains(r.costs.at(0), "default"));
}

TEST(Recipe, ShellValuesAreQuotedWhenTheShellWouldReadThem) {
  const allocator_config listed =
      allocator_config::parse_pytorch("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").config;
  const recipe r = recipe_for(listed, std::nullopt);
  // Canonical: the last run is named before '>', so PyTorch 2.9 (which would let '>' overwrite
  // 1024:4) and 2.10+ read the line alike.
  EXPECT_EQ(
      r.steps.at(0).text,
      "export PYTORCH_CUDA_ALLOC_CONF='roundup_power2_divisions:[256:1,512:2,1024:4,2048:8,>:8]'");
  EXPECT_EQ(
      recipe_for(allocator_config::parse("max_split_size_mb:256"), std::nullopt).steps[0].text,
      "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(Recipe, GarbageCollectionGetsTheFractionStep) {
  const allocator_config gc = allocator_config::parse("garbage_collection_threshold:0.8");
  for (const std::optional<double> fraction : {std::optional<double>(), std::optional(1.0)}) {
    const recipe r = recipe_for(gc, fraction);
    EXPECT_TRUE(
        has_step(r, recipe_step::kind::python, "torch.cuda.set_per_process_memory_fraction(1.0)"));
    EXPECT_TRUE(has_step(r, recipe_step::kind::python, "Before the first CUDA allocation"));
    EXPECT_EQ(r.steps.at(0).text,
              "export PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8");
  }
  const recipe half = recipe_for(gc, 0.5);
  EXPECT_TRUE(
      has_step(half, recipe_step::kind::python, "torch.cuda.set_per_process_memory_fraction(0.5)"));
  bool capped = false;
  for (const std::string& cost : half.costs) capped = capped || contains(cost, "OutOfMemoryError");
  EXPECT_TRUE(capped);
  // No threshold, no fraction: no Python at all.
  const recipe plain =
      recipe_for(allocator_config::parse("expandable_segments:True"), std::nullopt);
  EXPECT_EQ(plain.steps.size(), 1u);
  EXPECT_THROW(recipe_for(gc, 1.5), invalid_argument);
}

TEST(Recipe, CostsNameWhatEachSettingGivesUp) {
  const recipe r =
      recipe_for(allocator_config::parse(
                     "expandable_segments:True,max_split_size_mb:256,roundup_power2_divisions:4"),
                 std::nullopt);
  const std::string all = to_json(r)["costs"].dump();
  EXPECT_TRUE(contains(all, "CUDA IPC")) << all;
  EXPECT_TRUE(contains(all, "cudaMalloc")) << all;
  EXPECT_TRUE(contains(all, "rounding waste")) << all;
  // A line only the newer PyTorch reads says so.
  const recipe newer = recipe_for(allocator_config::parse("max_split_size_mb:20"), std::nullopt);
  bool refused = false;
  for (const std::string& cost : newer.costs) {
    refused = refused || contains(cost, "PyTorch 2.9 and earlier refuse this line");
  }
  EXPECT_TRUE(refused);
  const recipe async = recipe_for(allocator_config::parse("backend:cudaMallocAsync"), std::nullopt);
  EXPECT_EQ(async.steps.at(0).text, "export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
  EXPECT_TRUE(contains(async.costs.at(0), "does not model"));
}

TEST(Recipe, KeelPolicyLoadsThePluggableLibraryFirst) {
  const recipe r = recipe_for(allocator_config::parse("policy:keel"), std::nullopt);
  EXPECT_EQ(exported(r, "KEEL_ALLOC_CONF"), "policy:keel");
  EXPECT_FALSE(exported(r, "PYTORCH_CUDA_ALLOC_CONF"));
  const std::string python = [&] {
    for (const recipe_step& s : r.steps) {
      if (s.kind == recipe_step::kind::python) return s.text;
    }
    return std::string();
  }();
  EXPECT_TRUE(contains(python, "torch.cuda.memory.CUDAPluggableAllocator(")) << python;
  EXPECT_TRUE(contains(python, "\"keel_malloc\", \"keel_free\"")) << python;
  EXPECT_TRUE(contains(python, "torch.cuda.memory.change_current_allocator(keel_allocator)"));
  EXPECT_TRUE(contains(python, "libkeel_pluggable_alloc.so")) << python;
  EXPECT_TRUE(contains(python, "KEEL_PREFIX")) << python;
  EXPECT_TRUE(contains(python, "before anything allocates CUDA memory")) << python;
  // The loading line comes before the switch.
  EXPECT_LT(python.find("CUDAPluggableAllocator("), python.find("change_current_allocator("));
  const std::string costs = to_json(r)["costs"].dump();
  for (const char* what : {"memory_stats", "_record_memory_history", "_snapshot", "empty_cache",
                           "record_stream", "Can't swap an already initialized allocator", "IPC"}) {
    EXPECT_TRUE(contains(costs, what)) << what;
  }
  const recipe fraction = recipe_for(allocator_config::parse("policy:keel"), 0.9);
  EXPECT_TRUE(has_step(fraction, recipe_step::kind::python,
                       "keel_set_memory_fraction(ctypes.c_double(0.9), 0)"));
}

TEST(Recipe, JsonShape) {
  const nlohmann::json j =
      to_json(recipe_for(allocator_config::parse("garbage_collection_threshold:0.6"), 1.0));
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["title"].is_string());
  ASSERT_TRUE(j["steps"].is_array());
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][0]["kind"], "shell");
  EXPECT_EQ(j["steps"][1]["kind"], "python");
  EXPECT_TRUE(j["steps"][1]["text"].is_string());
  ASSERT_TRUE(j["costs"].is_array());
  EXPECT_TRUE(j["costs"][0].is_string());
  EXPECT_EQ(j.size(), 3u);
}

}  // namespace
}  // namespace keel::memory
