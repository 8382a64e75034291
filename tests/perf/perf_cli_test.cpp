// `keel perf ...` end to end: op and explain answers, the JSON contracts of llm and model,
// calibrate's device file, and one-line errors with exit code 2.
#include "process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace keel::test {
namespace {

using nlohmann::json;

json run_json(const std::vector<std::string>& args) {
  const process_result r = run_keel(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

TEST(PerfCli, OpGemmJson) {
  const json r = run_json({"perf", "op", "gemm", "8192", "8192", "8192", "--dtype", "bf16", "--gpu",
                           "h100-sxm", "--json"});
  EXPECT_EQ(r.at("bound"), "compute");
  EXPECT_EQ(r.at("peak_key"), "bf16_tensor");
  EXPECT_NEAR(r.at("predicted_ms").get<double>(), 2.0 * 8192 * 8192 * 8192 / 989.5e12 * 1e3, 1e-9);
}

TEST(PerfCli, ExplainSpmvSaysMemoryBound) {
  const process_result r = run_keel(
      {"perf", "explain", "spmv", "--gpu", "titan-v", "--vs", "rtx-2080-ti", "--dtype", "fp64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Both are memory-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("printf"), std::string::npos);
  const json j = run_json({"perf", "explain", "spmv", "--gpu", "titan-v", "--vs", "rtx-2080-ti",
                           "--dtype", "fp64", "--json"});
  // Bandwidths 652.8 vs 616 GB/s decide it, not the 16x FP64 gap.
  EXPECT_NEAR(j.at("time_ratio").get<double>(), 0.944, 0.01);
}

TEST(PerfCli, OpShapesValidate) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"perf", "op", "gemm", "0", "1", "1"},
           {"perf", "op", "conv2d", "--input", "1x3x224", "--out-channels", "64"},
           {"perf", "op", "spmv", "--rows", "10", "--nnz", "5", "--dtype", "fp7"}}) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(run_keel({"perf", "op", "conv2d", "--input", "1x64x56x56", "--out-channels", "64",
                      "--padding", "1"})
                .exit_code,
            0);
  EXPECT_EQ(run_keel({"perf", "op", "attention", "--heads", "32", "--seq", "4096", "--flash",
                      "--dtype", "bf16"})
                .exit_code,
            0);
  EXPECT_EQ(run_keel({"perf", "op", "elementwise", "--elements", "1e8"}).exit_code, 0);
}

TEST(PerfCli, LlmJsonContractAndSvg) {
  const std::string svg = std::string(KEEL_BINARY_DIR) + "/perf_llm_test.svg";
  const json r = run_json({"perf", "llm", "--config", "llama-2-7b", "--batch", "1", "--seq", "128",
                           "--phase", "prefill", "--gpu", "h100-sxm", "--svg", svg, "--json"});
  for (const char* key : {"params", "total_flops", "total_bytes", "predicted_ms", "layers"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r.at("params").get<double>(), 6738415616.0);
  EXPECT_NEAR(r.at("total_flops").get<double>() / 1700.06e9, 1.0, 0.005);
  EXPECT_FALSE(r.at("layers").empty());
  const process_result d = run_keel({"perf", "llm", "--config", "mixtral-8x7b", "--phase", "decode",
                                     "--kv-dtype", "fp8", "--flash", "--gpu", "rtx-4090"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("active per token"), std::string::npos);
}

// A model that does not fit is counted but gets no latency (exit 0, the report says why);
// bad parallel degrees are one line, exit 2.
TEST(PerfCli, LlmDoesNotFitAndParallelOptions) {
  const json m =
      run_json({"perf", "llm", "--config", "mixtral-8x7b", "--gpu", "h100-sxm", "--json"});
  EXPECT_EQ(m.at("fits"), false);
  EXPECT_TRUE(m.at("predicted_ms").is_null());
  EXPECT_EQ(
      m.at("memory").at("message").get<std::string>().rfind("does not fit: needs 93.45 GB", 0), 0u);
  const process_result text =
      run_keel({"perf", "llm", "--config", "llama-2-7b", "--gpu", "gtx-1050"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("no prediction: the model does not fit"), std::string::npos) << text.out;
  const json tp = run_json(
      {"perf", "llm", "--config", "llama-3.1-70b", "--tp", "8", "--generate", "16", "--json"});
  EXPECT_EQ(tp.at("fits"), true);
  EXPECT_EQ(tp.at("gpus"), 8);
  EXPECT_GT(tp.at("comm_ms").get<double>(), 0);
  EXPECT_GT(tp.at("generation").at("tokens_per_s").get<double>(), 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"perf", "llm", "--config", "llama-2-7b", "--tp", "3"},
           {"perf", "llm", "--config", "llama-2-7b", "--ep", "2"},
           {"perf", "llm", "--config", "llama-2-7b", "--quant", "int3"},
           {"perf", "llm", "--config", "llama-2-7b", "--train", "--generate", "4"}}) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
  }
}

TEST(PerfCli, ModelJsonContract) {
  const json r = run_json({"perf", "model", data_dir + "tiny.onnx", "--gpu", "h100-sxm", "--json"});
  for (const char* key : {"macs", "flops", "bytes", "nodes", "predicted_ms", "params"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r.at("macs").get<double>(), 93184.0);
  EXPECT_EQ(r.at("nodes").size(), 14u);
  double macs = 0;
  for (const json& n : r["nodes"]) {
    for (const char* key : {"name", "op_type", "macs", "flops", "bytes", "bound", "time_ms"}) {
      EXPECT_TRUE(n.contains(key)) << key;
    }
    macs += n.at("macs").get<double>();
  }
  EXPECT_EQ(macs, 93184.0);
  EXPECT_EQ(r.at("memory").at("fits"), true);
  EXPECT_LE(r.at("roofline_ms").get<double>(), r.at("predicted_ms").get<double>());
  const json shallow =
      run_json({"perf", "model", data_dir + "resnet50-graph.onnx", "--depth", "1", "--json"});
  for (const json& c : shallow.at("tree").at("children")) EXPECT_TRUE(c.at("children").empty());
  const process_result tree =
      run_keel({"perf", "model", data_dir + "resnet50-graph.onnx", "--depth", "1", "--top", "0"});
  EXPECT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_NE(tree.out.find("\n  layer3 "), std::string::npos) << tree.out;
  EXPECT_EQ(tree.out.find("\n    layer3.0 "), std::string::npos) << tree.out;
  const json resnet = run_json({"perf", "model", data_dir + "resnet50-graph.onnx", "--json"});
  EXPECT_NEAR(resnet.at("macs").get<double>() / 4.09e9, 1.0, 0.01);
  const std::string svg = std::string(KEEL_BINARY_DIR) + "/perf_model_test.svg";
  const process_result text =
      run_keel({"perf", "model", data_dir + "resnet50-graph.onnx", "--svg", svg});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("slowest nodes"), std::string::npos) << text.out;
  EXPECT_TRUE(std::filesystem::exists(svg));
}

// A dynamic-axes export: exact with --dim, refused (exit 2, naming the dims) without,
// counted at 1 with --assume-one.
TEST(PerfCli, ModelDynamicAxesNeedDimOrAssumeOne) {
  std::ifstream in(data_dir + "gpt-block.golden.json");
  const json golden = json::parse(in);
  const std::string file = data_dir + "gpt-block.onnx";
  const json r =
      run_json({"perf", "model", file, "--dim", "batch=2", "--dim", "sequence=128", "--json"});
  EXPECT_EQ(r.at("macs").get<double>(), golden.at("macs").get<double>());
  const process_result refused = run_keel({"perf", "model", file});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(count_lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("batch, sequence"), std::string::npos) << refused.err;
  const json one = run_json({"perf", "model", file, "--assume-one", "--json"});
  EXPECT_EQ(one.at("macs").get<double>(), golden.at("macs_all_one").get<double>());
}

TEST(PerfCli, CalibrateWritesADeviceFileTheModelsTake) {
  const std::string file = std::string(KEEL_BINARY_DIR) + "/perf_calibrate_test.json";
  const process_result c = run_keel({"perf", "calibrate", "--seconds", "0.02", "--dram-mib", "128",
                                     "--out", file, "--name", "here"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("GFLOP/s"), std::string::npos) << c.out;
  const json r = run_json({"perf", "model", data_dir + "tiny.onnx", "--gpu", file, "--json"});
  EXPECT_EQ(r.at("gpu"), "here");
  EXPECT_GT(r.at("predicted_ms").get<double>(), 0);
  const json g = run_json(
      {"perf", "op", "gemm", "512", "512", "512", "--dtype", "fp32", "--gpu", file, "--json"});
  EXPECT_GT(g.at("predicted_ms").get<double>(), 0);
}

TEST(PerfCli, ModelAndCalibrateBadInputIsOneLineExitTwo) {
  const std::string junk = std::string(KEEL_BINARY_DIR) + "/perf_junk.onnx";
  std::ofstream(junk) << "not an onnx file at all";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"perf", "model", data_dir + "no-such.onnx"},
           {"perf", "model", junk},
           {"perf", "model", data_dir + "tiny.onnx", "--dim", "batch"},
           {"perf", "model", data_dir + "tiny.onnx", "--gpu", "no-such-gpu"},
           {"perf", "calibrate", "--threads", "0"}}) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << args[2] << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("keel: ", 0), 0u) << r.err;
  }
}

}  // namespace
}  // namespace keel::test
