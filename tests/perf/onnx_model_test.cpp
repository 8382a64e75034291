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

// make_small_graphs.py: nn.LSTM(16, 32, 2 layers, bidirectional) on x [10, 3, 16]. Per layer:
// 2 directions x 10 steps x 3 sequences x 4 gates x 32 x (input + 32) MACs; FLOPs 2 x MACs plus
// 38 per direction, step, sequence and hidden unit (4 combine + 8 bias + 26 cell).
TEST(OnnxModel, CountsLstmByHand) {
  const onnx_report r = analyze_onnx(data_dir + "lstm.onnx", h100());
  const auto n = by_name(r);
  ASSERT_TRUE(n.contains("/rnn/LSTM") && n.contains("/rnn/LSTM_1"));
  const double units = 2.0 * 10 * 3;
  EXPECT_EQ(n.at("/rnn/LSTM")->kind, "matmul");
  EXPECT_DOUBLE_EQ(n.at("/rnn/LSTM")->macs, units * 128 * (16 + 32));
  EXPECT_DOUBLE_EQ(n.at("/rnn/LSTM")->cost.flops, 2 * units * 128 * 48 + units * 32 * 38);
  EXPECT_DOUBLE_EQ(n.at("/rnn/LSTM_1")->macs, units * 128 * (64 + 32));
  EXPECT_DOUBLE_EQ(n.at("/rnn/LSTM_1")->cost.flops, 2 * units * 128 * 96 + units * 32 * 38);
  EXPECT_DOUBLE_EQ(r.macs, units * 128 * (48 + 96));
  EXPECT_TRUE(r.unknown_ops.empty());
}

// nn.GRU(16, 32) on x [10, 3, 16]: 10 x 3 x 3 gates x 32 x (16 + 32) MACs; 27 FLOPs per step,
// sequence and hidden unit besides (3 combine + 6 bias + 18 cell).
TEST(OnnxModel, CountsGruByHand) {
  const onnx_report r = analyze_onnx(data_dir + "gru.onnx", h100());
  const onnx_node_cost& gru = *by_name(r).at("/rnn/GRU");
  EXPECT_DOUBLE_EQ(gru.macs, 30.0 * 96 * 48);
  EXPECT_DOUBLE_EQ(gru.cost.flops, 2 * 30.0 * 96 * 48 + 30.0 * 32 * 27);
  EXPECT_TRUE(r.unknown_ops.empty());
}

// einsum("bhqd,bhkd->bhqk") of two [2, 4, 8, 16] activations: 2*4*8*8*16 MACs, an attention
// product; einsum("bij,jk->bik") of [2, 8, 16] with a [16, 24] weight: 2*8*16*24, a GEMM.
TEST(OnnxModel, CountsEinsumByItsLabels) {
  const onnx_report r = analyze_onnx(data_dir + "einsum.onnx", h100());
  const auto n = by_name(r);
  EXPECT_DOUBLE_EQ(n.at("/Einsum")->macs, 2.0 * 4 * 8 * 8 * 16);
  EXPECT_EQ(n.at("/Einsum")->kind, "attention_matmul");
  // libonnx infers no Einsum shape; the equation gives it (the file declares it symbolic).
  EXPECT_EQ(n.at("/Einsum")->output_shape, (std::vector<std::int64_t>{2, 4, 8, 8}));
  EXPECT_EQ(n.at("/Einsum_1")->output_shape, (std::vector<std::int64_t>{2, 8, 24}));
  EXPECT_EQ(n.at("/Einsum")->efficiency_class, op_class::attention);
  EXPECT_DOUBLE_EQ(n.at("/Einsum")->cost.flops, 2 * 2.0 * 4 * 8 * 8 * 16);
  EXPECT_DOUBLE_EQ(n.at("/Einsum_1")->macs, 2.0 * 8 * 16 * 24);
  EXPECT_EQ(n.at("/Einsum_1")->kind, "matmul");
  EXPECT_TRUE(r.unknown_ops.empty());
}

// nn.Embedding(1000, 64) looked up with 3x4 ids: the lookup reads 12 rows, not the table.
TEST(OnnxModel, EmbeddingLookupsReadTheirRowsOnly) {
  const onnx_report r = analyze_onnx(data_dir + "embed.onnx", h100());
  const onnx_node_cost& gather = *by_name(r).at("/tok/Gather");
  const double rows = 12.0 * 64 * 4;                          // 3,072 bytes of the table
  EXPECT_DOUBLE_EQ(gather.cost.bytes, rows + 12 * 8 + rows);  // rows, int64 ids, output
  // The table stays in the weights the device must hold.
  EXPECT_DOUBLE_EQ(r.weight_bytes, 2 * 1000.0 * 64 * 4);
}

bool has_note(const onnx_report& r, const std::string& part) {
  for (const std::string& note : r.param_notes) {
    if (note.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(OnnxModel, ParameterNotesSayWhenTheFileDiffersFromTheModules) {
  // The head tied to the embedding was written a second time, transposed.
  const onnx_report tied = analyze_onnx(data_dir + "embed.onnx", h100());
  EXPECT_EQ(tied.params, 2 * 1000.0 * 64);
  EXPECT_TRUE(has_note(tied, "'onnx::MatMul_7' (64x1000) has the shape of 'tok.weight' transposed"))
      << ::testing::PrintToString(tied.param_notes);
  // Conv2d(bias=False) + BatchNorm2d(8): the file holds a folded conv with 8 biases.
  const onnx_report bn = analyze_onnx(data_dir + "bn.onnx", h100());
  EXPECT_EQ(bn.params, 8 * 3 * 3 * 3 + 8);
  EXPECT_TRUE(has_note(bn, "1 convolutions have exporter-computed weights"))
      << ::testing::PrintToString(bn.param_notes);
  EXPECT_TRUE(has_note(bn, "batch norms were folded"));
  // Module-named weights as written: nothing to say.
  EXPECT_TRUE(analyze_onnx(data_dir + "tiny.onnx", h100()).param_notes.empty());
  // An MLP's two exporter-transposed weights (64x256, 256x64) have each other's shape but are
  // not tied: only an embedding table's transposed copy is.
  const onnx_report mlp = analyze_onnx(data_dir + "mlp.onnx", h100());
  EXPECT_FALSE(has_note(mlp, "has the shape of")) << ::testing::PrintToString(mlp.param_notes);
  EXPECT_TRUE(has_note(mlp, "computed by the exporter"));
}

TEST(OnnxModel, MemoryNeedIsWeightsAndPeakActivations) {
  // bn.onnx: x (768 B) -> Conv (1152 B) -> Relu (1152 B). Peak: the Relu's input and output.
  const onnx_report r = analyze_onnx(data_dir + "bn.onnx", h100());
  EXPECT_DOUBLE_EQ(r.weight_bytes, (216 + 8) * 4.0);
  EXPECT_DOUBLE_EQ(r.peak_activation_bytes, 2 * 1152.0);
  EXPECT_DOUBLE_EQ(r.memory().total(), 896 + 2304.0);
}

TEST(OnnxModel, ExpectedTimeUsesTheAchievableFractions) {
  // Bandwidth without limit: every node is compute-bound, so times follow the rates.
  gpu_spec fast = h100();
  fast.bandwidth_gbs = 1e12;
  const onnx_report r = analyze_onnx(data_dir + "einsum.onnx", fast);
  const auto n = by_name(r);
  const double peak = fast.peak(dtype::f32, true).tflops * 1e12;
  const double gemm = achievable_fraction(fast, op_class::gemm).fraction;
  const double attention = achievable_fraction(fast, op_class::attention).fraction;
  EXPECT_LT(gemm, 1);
  EXPECT_LT(attention, 1);
  EXPECT_DOUBLE_EQ(n.at("/Einsum_1")->seconds, n.at("/Einsum_1")->cost.flops / (peak * gemm));
  EXPECT_DOUBLE_EQ(n.at("/Einsum")->seconds, n.at("/Einsum")->cost.flops / (peak * attention));
  EXPECT_DOUBLE_EQ(n.at("/Einsum")->bound_seconds, n.at("/Einsum")->cost.flops / peak);
  EXPECT_LT(r.roofline_seconds, r.seconds);
  ASSERT_EQ(r.efficiencies.size(), 3u);
  EXPECT_EQ(r.efficiencies[0].cls, op_class::gemm);
}

// make_small_graphs.py: a class token expanded to the batch (ConstantOfShape -> Equal -> Where
// -> Expand, as torchvision's ViT exports it) is folded, so every shape resolves.
TEST(OnnxModel, ExpandToTheBatchIsFolded) {
  const onnx_report r = analyze_onnx(data_dir + "token.onnx", h100());
  const onnx_node_cost& proj = *by_name(r).at("/proj/MatMul");
  EXPECT_EQ(proj.output_shape, (std::vector<std::int64_t>{2, 5, 16}));
  EXPECT_DOUBLE_EQ(r.macs, 2.0 * 5 * 8 * 16);
}

// make_small_graphs.py: padding to a window multiple by amounts computed from the input's
// shape, as torchvision's Swin does (a [-1, 2] pad matrix reversed and transposed), is folded.
TEST(OnnxModel, ComputedPaddingIsFolded) {
  const onnx_report r = analyze_onnx(data_dir + "pad.onnx", h100());
  const auto n = by_name(r);
  EXPECT_EQ(n.at("/Pad")->output_shape, (std::vector<std::int64_t>{1, 8, 8, 4}));
  EXPECT_EQ(n.at("/proj/MatMul")->output_shape, (std::vector<std::int64_t>{1, 8, 8, 8}));
  EXPECT_DOUBLE_EQ(r.macs, 64.0 * 4 * 8);
  // 20 blocks, each resolvable only after the one before it: one folding pass each.
  const onnx_report deep = analyze_onnx(data_dir + "pads.onnx", h100());
  EXPECT_DOUBLE_EQ(deep.macs, 20 * 64.0 * 4 * 4);
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
