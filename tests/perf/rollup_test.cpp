// The module tree: scopes from ONNX node names, sums at every level, collapse by depth, and
// the tree of ResNet-50's export against its totals.
#include "keel/perf/rollup.hpp"
#include "keel/perf/report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace keel::perf {
namespace {

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

TEST(Rollup, ScopesComeFromTheSlashSeparatedName) {
  EXPECT_EQ(scope_of("/layer1/layer1.0/conv1/Conv"),
            (std::vector<std::string>{"layer1", "layer1.0", "conv1"}));
  EXPECT_EQ(scope_of("/Relu"), std::vector<std::string>{});
  EXPECT_EQ(scope_of("Constant_5"), std::vector<std::string>{});
}

rollup_entry entry(std::vector<std::string> scope, std::string name, double flops, double bytes,
                   double seconds, bound b) {
  return {std::move(scope), name, name, flops / 2, {flops, bytes}, seconds, seconds / 2, b};
}

TEST(Rollup, SumsEveryLevelAndKeepsFirstAppearanceOrder) {
  const rollup_node t = build_rollup("net", {entry({"b"}, "MatMul", 100, 10, 3, bound::compute),
                                             entry({"a", "x"}, "Add", 1, 8, 1, bound::memory),
                                             entry({"b"}, "Relu", 2, 4, 2, bound::memory),
                                             entry({}, "Softmax", 5, 5, 4, bound::memory)});
  EXPECT_EQ(t.name, "net");
  EXPECT_EQ(t.ops, 4u);
  EXPECT_DOUBLE_EQ(t.cost.flops, 108);
  EXPECT_DOUBLE_EQ(t.cost.bytes, 27);
  EXPECT_DOUBLE_EQ(t.seconds, 10);
  EXPECT_DOUBLE_EQ(t.bound_seconds, 5);
  EXPECT_DOUBLE_EQ(t.macs, 54);
  ASSERT_EQ(t.children.size(), 3u);
  EXPECT_EQ(t.children[0].name, "b");
  EXPECT_EQ(t.children[1].name, "a");
  EXPECT_EQ(t.children[2].name, "Softmax");
  EXPECT_TRUE(t.children[2].leaf());
  const rollup_node& b = t.children[0];
  EXPECT_EQ(b.ops, 2u);
  EXPECT_DOUBLE_EQ(b.intensity(), 102.0 / 14);
  // 3 s compute-bound against 2 s memory-bound: compute.
  EXPECT_EQ(b.limit(), bound::compute);
  EXPECT_EQ(t.limit(), bound::memory);  // 3 s against 7 s
  EXPECT_EQ(t.children[1].children[0].name, "x");
  EXPECT_EQ(t.children[1].children[0].children[0].op_type, "Add");
}

TEST(Rollup, CollapseKeepsTotalsDownToTheDepth) {
  const rollup_node t = build_rollup("net", {entry({"a", "x"}, "Add", 1, 8, 1, bound::memory),
                                             entry({"a", "y"}, "Mul", 1, 8, 1, bound::memory)});
  EXPECT_TRUE(collapse(t, 0).children.empty());
  EXPECT_EQ(collapse(t, 0).ops, 2u);
  const rollup_node one = collapse(t, 1);
  ASSERT_EQ(one.children.size(), 1u);
  EXPECT_TRUE(one.children[0].children.empty());
  EXPECT_DOUBLE_EQ(one.children[0].cost.bytes, 16);
  EXPECT_EQ(collapse(t, -1).children[0].children.size(), 2u);
  const nlohmann::json j = to_json(one);
  EXPECT_EQ(j.at("children").at(0).at("name"), "a");
  EXPECT_EQ(j.at("children").at(0).at("children").size(), 0u);
  EXPECT_EQ(to_json(t, false).at("time_ms"), nullptr);
  // One line per node shown, under a header.
  const std::string text = rollup_text(t, 1);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_NE(text.find("\n  a "), std::string::npos) << text;
}

TEST(Rollup, ResNet50TreeFollowsTorchvisionsModules) {
  model_request r;
  r.path = data_dir + "resnet50-graph.onnx";
  const model_result x = run_model(r);
  const rollup_node& t = x.tree;
  EXPECT_EQ(t.name, "resnet50-graph.onnx");
  EXPECT_EQ(t.ops, x.report.nodes.size());
  EXPECT_DOUBLE_EQ(t.macs, x.report.macs);
  EXPECT_NEAR(t.seconds, x.report.seconds, 1e-12 * x.report.seconds);
  std::vector<std::string> top;
  for (const rollup_node& c : t.children) top.push_back(c.name);
  for (const char* name : {"conv1", "layer1", "layer2", "layer3", "layer4", "fc"}) {
    EXPECT_NE(std::find(top.begin(), top.end(), name), top.end()) << name;
  }
  double layers = 0;
  for (const rollup_node& c : t.children) layers += c.macs;
  EXPECT_DOUBLE_EQ(layers, t.macs);
  // layer1 holds 3 bottlenecks: layer1.0 .. layer1.2.
  const auto layer1 = std::find_if(t.children.begin(), t.children.end(),
                                   [](const rollup_node& c) { return c.name == "layer1"; });
  ASSERT_NE(layer1, t.children.end());
  EXPECT_EQ(layer1->children.size(), 3u);
  EXPECT_EQ(layer1->children[0].name, "layer1.0");
}

}  // namespace
}  // namespace keel::perf
