// ONNX import: per-node counts of a small graph checked by hand, ResNet-50's published MAC
// count, the ceiling/overhead/cache extensions of the time model, and bad input.
#include "keel/perf/onnx_model.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace keel::perf {
namespace {

namespace fs = std::filesystem;

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

const gpu_spec& h100() { return gpu_database::builtin().at("h100-sxm"); }

std::map<std::string, const onnx_node_cost*> by_name(const onnx_report& r) {
  std::map<std::string, const onnx_node_cost*> m;
  for (const onnx_node_cost& n : r.nodes) m[n.name] = &n;
  return m;
}

// tiny.onnx (make_tiny_onnx.py): input 1x3x16x16, Conv 3->8 3x3 pad 1, Relu, an attention
// pattern over the 8 channels (a @ a^T, Softmax, @ a), Add, MaxPool 2, Flatten, Gemm 512->10.
TEST(OnnxModel, CountsTheTinyGraphByHand) {
  const onnx_report r = analyze_onnx(data_dir + "tiny.onnx", h100());
  EXPECT_EQ(r.opset, 13);
  EXPECT_EQ(r.params, 8 * 3 * 3 * 3 + 8 + 10 * 512 + 10);
  const auto n = by_name(r);
  ASSERT_TRUE(n.contains("/conv/Conv") && n.contains("/MatMul") && n.contains("/MatMul_1") &&
              n.contains("/fc/Gemm") && n.contains("/Softmax") && n.contains("/MaxPool") &&
              n.contains("/Reshape"));

  const onnx_node_cost& conv = *n.at("/conv/Conv");
  EXPECT_EQ(conv.kind, "matmul");
  EXPECT_DOUBLE_EQ(conv.macs, 8.0 * 16 * 16 * 3 * 3 * 3);                  // 55,296
  EXPECT_DOUBLE_EQ(conv.cost.flops, 2 * 55296.0 + 8 * 16 * 16);            // + bias
  EXPECT_DOUBLE_EQ(conv.cost.bytes, 4.0 * (3 * 256 + 216 + 8 + 8 * 256));  // x, w, b, y
  EXPECT_EQ(conv.output_shape, (std::vector<std::int64_t>{1, 8, 16, 16}));

  const onnx_node_cost& qk = *n.at("/MatMul");
  EXPECT_EQ(qk.kind, "attention_matmul");
  EXPECT_DOUBLE_EQ(qk.macs, 8.0 * 8 * 256);
  EXPECT_DOUBLE_EQ(n.at("/MatMul_1")->macs, 8.0 * 256 * 8);
  EXPECT_DOUBLE_EQ(n.at("/Softmax")->cost.flops, 5.0 * 64);
  EXPECT_DOUBLE_EQ(n.at("/MaxPool")->cost.flops, 8.0 * 8 * 8 * 4);

  const onnx_node_cost& fc = *n.at("/fc/Gemm");
  EXPECT_EQ(fc.kind, "matmul");
  EXPECT_DOUBLE_EQ(fc.macs, 5120);
  EXPECT_DOUBLE_EQ(fc.cost.flops, 2 * 5120.0 + 10);

  const onnx_node_cost& reshape = *n.at("/Reshape");
  EXPECT_EQ(reshape.kind, "view");
  EXPECT_EQ(reshape.cost.bytes, 0);
  EXPECT_EQ(reshape.seconds, 0);

  EXPECT_DOUBLE_EQ(r.macs, 93184);
  EXPECT_TRUE(r.unknown_ops.empty());
  double flops = 0, seconds = 0;
  for (const onnx_node_cost& c : r.nodes) flops += c.cost.flops, seconds += c.seconds;
  EXPECT_DOUBLE_EQ(r.flops, flops);
  EXPECT_DOUBLE_EQ(r.seconds, seconds);
  EXPECT_GT(r.seconds, 0);
}

// ResNet-50 at 224x224 (torchvision, exported by torch.onnx.export; weights stripped):
// 4.09 GMACs as fvcore/ptflops report, 25.56 M parameters (batch norms folded into the convs).
TEST(OnnxModel, ResNet50MatchesThePublishedMacs) {
  const onnx_report r = analyze_onnx(data_dir + "resnet50-graph.onnx", h100());
  EXPECT_NEAR(r.macs / 4.09e9, 1.0, 0.01) << r.macs;
  EXPECT_NEAR(r.params / 25.56e6, 1.0, 0.01) << r.params;
  int convs = 0;
  for (const onnx_node_cost& c : r.nodes) convs += c.op_type == "Conv";
  EXPECT_EQ(convs, 53);
  EXPECT_TRUE(r.unknown_ops.empty());
}

gpu_spec toy_cpu() {
  // 1 TFLOP/s fp32, 10 GB/s DRAM, 100 GB/s for working sets up to 1 MB.
  return gpu_database::load(R"({"schema": "keel.perf.gpus/1",
    "sources": {"t": {"title": "test device", "url": "https://example.org"}},
    "compute_capabilities": [], "cuda": [], "cudnn": [],
    "gpus": [{"name": "toy", "display": "toy", "arch": "CPU", "segment": "cpu", "cc": "0.0",
              "year": 2026, "sms": 1, "tflops": {"fp32": 1.0}, "memory_gb": 1,
              "memory_type": "DRAM", "bandwidth_gbs": 10,
              "cache_levels": [{"name": "L2", "bytes": 1e6, "bandwidth_gbs": 100}],
              "ceilings_tflops": {"conv_kxk": 0.001}, "ceilings_gbs": {"conv_depthwise": 5},
              "overhead_us": 5, "source": ["t"]}]})",
                            "toy.json")
      .at("toy");
}

TEST(OnnxModel, CeilingsOverheadAndCacheLevelsShapeTheTime) {
  const gpu_spec toy = toy_cpu();
  EXPECT_DOUBLE_EQ(toy.bandwidth_for(1e5), 100e9);
  EXPECT_DOUBLE_EQ(toy.bandwidth_for(1e7), 10e9);
  EXPECT_DOUBLE_EQ(toy.ceilings_gbs.at("conv_depthwise"), 5);
  const onnx_report r = analyze_onnx(data_dir + "tiny.onnx", toy);
  const auto n = by_name(r);
  const onnx_node_cost& conv = *n.at("/conv/Conv");
  EXPECT_EQ(conv.peak_key, "ceiling:conv_kxk");
  // 112,640 FLOPs at the 1 GFLOP/s ceiling: compute bound, plus 5 us dispatch.
  EXPECT_EQ(conv.point.limit, bound::compute);
  EXPECT_NEAR(conv.seconds, 112640 / 1e9 + 5e-6, 1e-12);
  // The Relu's 16 KiB fit the 1 MB level: bytes at 100 GB/s.
  const onnx_node_cost& relu = *n.at("/Relu");
  EXPECT_NEAR(relu.point.seconds, 2.0 * 2048 * 4 / 100e9, 1e-15);
  EXPECT_EQ(n.at("/Reshape")->seconds, 0);
  // The pure hardware roofline ignores ceilings and overhead.
  EXPECT_LT(r.roofline_seconds, r.seconds);

  // A GB/s ceiling caps the bandwidth of its class: MaxPool's 10 KiB at 0.001 GB/s.
  gpu_spec slow_pool = toy;
  slow_pool.ceilings_gbs["pool"] = 0.001;
  const onnx_report slow = analyze_onnx(data_dir + "tiny.onnx", slow_pool);
  const onnx_node_cost& pool = *by_name(slow).at("/MaxPool");
  EXPECT_EQ(pool.peak_key, "ceiling:pool");
  EXPECT_EQ(pool.point.limit, bound::memory);
  EXPECT_NEAR(pool.point.seconds, 4.0 * (2048 + 512) / 1e6, 1e-12);
}

TEST(OnnxModel, KernelClassesFollowTheConvolutionShape) {
  gpu_spec toy = toy_cpu();
  toy.ceilings_tflops = {{"conv_kxk", 0.1}, {"conv_1x1", 0.01}, {"pool", 0.001}, {"gemm", 0.01}};
  const onnx_report r = analyze_onnx(data_dir + "resnet50-graph.onnx", toy);
  std::map<std::string, int> keys;
  for (const onnx_node_cost& c : r.nodes) ++keys[c.peak_key];
  // 32 bottleneck 1x1s and layer1's unit-stride downsample are GEMMs; the stem, 16 3x3s and the
  // three stride-2 1x1 downsamples are convolutions proper.
  EXPECT_EQ(keys["ceiling:conv_1x1"], 33);
  EXPECT_EQ(keys["ceiling:conv_kxk"], 20);
  EXPECT_EQ(keys["ceiling:pool"], 1);
  EXPECT_EQ(keys["ceiling:gemm"], 1);
}

TEST(OnnxModel, DimValuesScaleSymbolicDimensions) {
  // tiny.onnx has a fixed batch; the option is accepted and changes nothing there.
  onnx_options o;
  o.dim_values["batch"] = 4;
  EXPECT_DOUBLE_EQ(analyze_onnx(data_dir + "tiny.onnx", h100(), o).macs, 93184);
}

// gpt-block.onnx (make_gpt_block.py): a GPT-2-small decoder block exported with dynamic
// batch/sequence axes; the golden file holds the closed-form MAC counts.
nlohmann::json gpt_golden() {
  std::ifstream in(data_dir + "gpt-block.golden.json");
  return nlohmann::json::parse(in);
}

std::string message_of_analyze(const onnx_options& o) {
  try {
    analyze_onnx(data_dir + "gpt-block.onnx", h100(), o);
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxModel, DynamicAxesAreBoundBeforeInference) {
  const nlohmann::json golden = gpt_golden();
  onnx_options o;
  for (const auto& [name, value] : golden.at("dims").items()) o.dim_values[name] = value;
  const onnx_report r = analyze_onnx(data_dir + "gpt-block.onnx", h100(), o);
  EXPECT_EQ(r.macs, golden.at("macs").get<double>());
  // Every node's output shape follows from the dims: 2 x 128 x ... wherever a batch is.
  for (const onnx_node_cost& n : r.nodes) {
    if (n.kind == "matmul" || n.kind == "attention_matmul") {
      ASSERT_FALSE(n.output_shape.empty()) << n.name;
      EXPECT_EQ(n.output_shape[0], 2) << n.name;
    }
  }
  o.assume_one = true;  // changes nothing once every dimension has a value
  EXPECT_EQ(analyze_onnx(data_dir + "gpt-block.onnx", h100(), o).macs,
            golden.at("macs").get<double>());
}

TEST(OnnxModel, UnresolvedDimensionsAreRefusedUnlessAssumedOne) {
  const nlohmann::json golden = gpt_golden();
  onnx_options o;
  const std::string both = message_of_analyze(o);
  EXPECT_NE(both.find("symbolic dimensions without a value: batch, sequence"), std::string::npos)
      << both;
  EXPECT_NE(both.find("--assume-one"), std::string::npos) << both;
  o.dim_values["batch"] = 2;
  const std::string one = message_of_analyze(o);
  EXPECT_NE(one.find("without a value: sequence"), std::string::npos) << one;
  EXPECT_EQ(one.find("batch"), std::string::npos) << one;
  o.dim_values.clear();
  o.assume_one = true;
  EXPECT_EQ(analyze_onnx(data_dir + "gpt-block.onnx", h100(), o).macs,
            golden.at("macs_all_one").get<double>());
}

TEST(OnnxModel, RejectsBadFiles) {
  EXPECT_THROW(analyze_onnx(data_dir + "no-such.onnx", h100()), io_error);
  const fs::path junk = fs::temp_directory_path() / "keel-perf-junk.onnx";
  {
    std::ofstream out(junk, std::ios::binary);
    out << "\xff\xff\xff\xff not a protobuf";
  }
  EXPECT_THROW(analyze_onnx(junk.string(), h100()), parse_error);
  fs::remove(junk);
}

}  // namespace
}  // namespace keel::perf
