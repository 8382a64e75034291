// keel/perf/report.hpp: the perf commands as requests — op dispatch, explain's words, the
// llm / model / calibrate documents — and their checks with the CLI's messages.
#include "keel/perf/report.hpp"
#include "keel/perf/text_report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "error_message.hpp"
#include "keel/core/error.hpp"

namespace keel::perf {
namespace {

using nlohmann::json;

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

using keel::test::message_of;

op_request gemm(double m, double n, double k) {
  op_request r;
  r.kind = "gemm";
  r.mnk = {m, n, k};
  return r;
}

TEST(PerfReport, OpGemmDispatchesAndDocuments) {
  op_request r = gemm(8192, 8192, 8192);
  r.dtype = "bf16";
  const op_result x = run_op(r);
  EXPECT_EQ(x.description, "gemm 8192x8192x8192");
  EXPECT_EQ(x.peak.key, "bf16_tensor");
  const json j = to_json(x);
  EXPECT_EQ(j.at("op"), "gemm");
  EXPECT_EQ(j.at("dtype"), "bf16");
  EXPECT_EQ(j.at("gpu"), "h100-sxm");
  EXPECT_EQ(j.at("bound"), "compute");
  EXPECT_NEAR(j.at("predicted_ms").get<double>(), 2.0 * 8192 * 8192 * 8192 / 989.5e12 * 1e3, 1e-9);
  EXPECT_EQ(j.size(), 16u);
  r.tensor = false;
  EXPECT_NE(run_op(r).peak.key, "bf16_tensor");
}

TEST(PerfReport, EveryKindDispatches) {
  op_request spmv;
  spmv.kind = "spmv";
  spmv.rows = 1e6;
  spmv.nnz = 1e7;
  EXPECT_EQ(to_json(run_op(spmv)).at("bound"), "memory");
  spmv.cols = 2e6;
  EXPECT_NE(run_op(spmv).description.find("1000000 rows"), std::string::npos);
  op_request conv;
  conv.kind = "conv2d";
  conv.input = "1x64x56x56";
  conv.out_channels = 64;
  conv.padding = 1;
  EXPECT_NE(run_op(conv).description.find("conv2d 1x64x56x56 -> 1x64x56x56, kernel 3x3"),
            std::string::npos);
  op_request att;
  att.kind = "attention";
  att.heads = 32;
  att.seq = 4096;
  att.flash = true;
  EXPECT_NE(run_op(att).description.find("32 heads (32 kv), q 4096 x kv 4096"), std::string::npos);
  op_request ew;
  ew.kind = "elementwise";
  ew.elements = 1e8;
  EXPECT_EQ(run_op(ew).cost.flops, 1e8);
  EXPECT_EQ(op_kinds().size(), 5u);
}

TEST(PerfReport, BadRequestsGetTheCliMessages) {
  op_request r = gemm(0, 1, 1);
  EXPECT_EQ(message_of([&] { run_op(r); }),
            "mnk: 0 is out of range, expected a number in (0, 1000000000000]");
  r = gemm(1, 1, 1);
  r.batch = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of([&] { run_op(r); }),
            "--batch: nan is not a finite number, expected a number in [1, 1000000000000]");
  r = gemm(1, 1, 1);
  r.mnk.pop_back();
  EXPECT_EQ(message_of([&] { run_op(r); }), "gemm needs M N K");
  r = gemm(1, 1, 1);
  r.dtype = "fp7";
  EXPECT_NE(message_of([&] { run_op(r); }).find("fp7"), std::string::npos);
  r = gemm(1, 1, 1);
  r.gpu = "no-such-gpu";
  EXPECT_NE(message_of([&] { run_op(r); }).find("no-such-gpu"), std::string::npos);
  op_request spmv;
  spmv.kind = "spmv";
  spmv.nnz = 5;
  EXPECT_EQ(message_of([&] { run_op(spmv); }), "--rows is required");
  spmv.rows = 10;
  spmv.index_bytes = 17;
  EXPECT_EQ(message_of([&] { run_op(spmv); }),
            "--index-bytes: 17 is out of range, expected a number in [1, 16]");
  op_request conv;
  conv.kind = "conv2d";
  conv.input = "1x3x224";
  conv.out_channels = 64;
  EXPECT_EQ(message_of([&] { run_op(conv); }),
            "bad --input NxCxHxW '1x3x224' (expected 4 numbers joined by 'x')");
  conv.input = "1x3x224x-2";
  EXPECT_EQ(message_of([&] { run_op(conv); }),
            "bad --input NxCxHxW '1x3x224x-2' (each dimension an integer in [1, 1099511627776])");
  conv.input = "1x3x224x224";
  conv.stride = -1;
  EXPECT_EQ(message_of([&] { run_op(conv); }),
            "--stride: -1 is negative, expected an integer in [1, 1099511627776]");
  op_request ew;
  ew.kind = "elementwise";
  ew.elements = 10;
  ew.inputs = std::numeric_limits<double>::quiet_NaN();  // the shape check alone lets NaN by
  EXPECT_EQ(message_of([&] { run_op(ew); }),
            "--inputs: nan is not a finite number, expected a number in [0, 1000000]");
  op_request unknown;
  unknown.kind = "fft";
  EXPECT_NE(message_of([&] { run_op(unknown); }).find("unknown op 'fft'"), std::string::npos);
}

TEST(PerfReport, ExplainSpmvInWords) {
  explain_request r;
  r.op.kind = "spmv";  // rows and nnz default to 1e6 and 1e7
  r.op.dtype = "fp64";
  r.op.gpu = "titan-v";
  r.vs = "rtx-2080-ti";
  const explain_result x = run_explain(r);
  EXPECT_NEAR(x.time_ratio, 0.944, 0.01);
  ASSERT_TRUE(x.a_no_reuse && x.b_no_reuse);
  EXPECT_EQ(x.a.description, "CSR spmv 1000000 rows, 10000000 nonzeros (10.0 per row)");
  bool memory_bound = false, printf_hint = false;
  for (const std::string& line : x.explanation) {
    memory_bound = memory_bound || line.find("Both are memory-bound") != std::string::npos;
    printf_hint = printf_hint || line.find("printf") != std::string::npos;
  }
  EXPECT_TRUE(memory_bound);
  EXPECT_TRUE(printf_hint);
  const json j = to_json(x);
  EXPECT_EQ(j.at("a").at("gpu"), "titan-v");
  EXPECT_EQ(j.at("explanation").size(), x.explanation.size());
  r.op.x_reuse = false;
  EXPECT_FALSE(run_explain(r).a_no_reuse);
}

TEST(PerfReport, LlmDocumentAndChart) {
  llm_request r;
  r.config = "llama-2-7b";
  const std::string svg = (std::filesystem::path(testing::TempDir()) / "perf_report_llm.svg");
  r.svg = svg;
  const llm_result x = run_llm(r);
  EXPECT_TRUE(std::filesystem::exists(svg));
  const json j = to_json(x);
  EXPECT_EQ(j.at("params").get<std::uint64_t>(), 6738415616u);
  EXPECT_EQ(j.at("kv_dtype"), "bf16");
  EXPECT_EQ(j.at("phase"), "prefill");
  EXPECT_EQ(j.at("layers").size(), x.report.ops.size());
  EXPECT_NE(llm_chart(x).find("llama-2-7b prefill b1 s128 bf16 on"), std::string::npos);
  r.svg.clear();
  r.phase = "decode";
  r.kv_dtype = "fp8";
  EXPECT_EQ(to_json(run_llm(r)).at("kv_dtype"), "fp8");
  r.phase = "train";
  EXPECT_NE(message_of([&] { run_llm(r); }).find("unknown phase 'train'"), std::string::npos);
  r.phase = "prefill";
  r.seq = -5;
  EXPECT_EQ(message_of([&] { run_llm(r); }),
            "--seq: -5 is out of range, expected a number in [1, 1000000000000]");
}

TEST(PerfReport, ModelDocumentAndDims) {
  model_request r;
  r.path = data_dir + "tiny.onnx";
  const json j = to_json(run_model(r));
  EXPECT_EQ(j.at("macs").get<double>(), 93184.0);
  EXPECT_EQ(j.at("nodes").size(), 14u);
  EXPECT_EQ(j.at("gpu"), "h100-sxm");
  r.dims = {"batch"};
  EXPECT_EQ(message_of([&] { run_model(r); }),
            "bad --dim 'batch' (expected NAME=VALUE, VALUE an integer in [1, 1099511627776])");
  r.dims = {"batch=0"};
  EXPECT_NE(message_of([&] { run_model(r); }).find("bad --dim 'batch=0'"), std::string::npos);
  r.dims = {"batch=4"};
  EXPECT_NO_THROW(run_model(r));
  r.path = data_dir + "no-such.onnx";
  EXPECT_THROW(run_model(r), keel::io_error);
}

TEST(PerfReport, ModelThatDoesNotFitGetsNoLatency) {
  // A device of 2 KiB: bn.onnx needs 896 B of weights and 2,304 B of activations.
  const std::string device =
      (std::filesystem::temp_directory_path() / "keel-perf-2kib-device.json").string();
  {
    std::ofstream out(device);
    out << R"({"schema": "keel.perf.gpus/1",
      "sources": {"t": {"title": "test device", "url": "https://example.org"}},
      "compute_capabilities": [], "cuda": [], "cudnn": [],
      "gpus": [{"name": "tiny-gpu", "display": "tiny", "arch": "Test", "segment": "datacenter",
                "cc": "8.0", "year": 2026, "sms": 1, "tflops": {"fp32": 1.0},
                "memory_gb": 1.9073486328125e-06, "memory_type": "HBM", "bandwidth_gbs": 10,
                "source": ["t"]}]})";
  }
  model_request r;
  r.path = data_dir + "bn.onnx";
  r.gpu = device;
  const model_result x = run_model(r);
  EXPECT_FALSE(x.fit.fits);
  EXPECT_NEAR(x.fit.shortfall, 3200 - 2048, 1e-6);
  EXPECT_NE(x.fit.message.find("does not fit"), std::string::npos) << x.fit.message;
  const json j = to_json(x);
  EXPECT_EQ(j.at("predicted_ms"), nullptr);
  EXPECT_EQ(j.at("roofline_ms"), nullptr);
  EXPECT_EQ(j.at("memory").at("fits"), false);
  EXPECT_EQ(j.at("nodes").at(0).at("time_ms"), nullptr);
  EXPECT_EQ(j.at("tree").at("time_ms"), nullptr);
  EXPECT_EQ(j.at("macs").get<double>(), 8 * 27 * 36.0);  // still counted
  const std::string text = to_text(x);
  EXPECT_NE(text.find("no latency: the model does not fit"), std::string::npos) << text;
  EXPECT_EQ(text.find("expect about"), std::string::npos);
  // It fits on the default H100, with a latency.
  r.gpu = "h100-sxm";
  const json fits = to_json(run_model(r));
  EXPECT_EQ(fits.at("memory").at("fits"), true);
  EXPECT_GT(fits.at("predicted_ms").get<double>(), 0);
  std::filesystem::remove(device);
}

TEST(PerfReport, ModelTreeFollowsTheDepth) {
  model_request r;
  r.path = data_dir + "resnet50-graph.onnx";
  const json whole = to_json(run_model(r));
  EXPECT_EQ(whole.at("tree").at("ops").get<std::size_t>(), whole.at("nodes").size());
  bool deep = false;
  for (const json& c : whole.at("tree").at("children")) deep = deep || !c.at("children").empty();
  EXPECT_TRUE(deep);
  r.depth = 1;
  const json one = to_json(run_model(r));
  for (const json& c : one.at("tree").at("children")) EXPECT_TRUE(c.at("children").empty());
  r.depth = -2;
  EXPECT_EQ(message_of([&] { run_model(r); }),
            "--depth: -2 is out of range, expected an integer in [-1, 1000000]");
}

TEST(PerfReport, CalibrateChecksItsOptions) {
  calibrate_request r;
  r.threads = 0;
  EXPECT_EQ(message_of([&] { run_calibrate(r); }),
            "--threads: 0 is out of range, expected an integer in [1, 1024]");
  r.threads = 1;
  r.seconds = 0;
  EXPECT_EQ(message_of([&] { run_calibrate(r); }),
            "--seconds: 0 is out of range, expected a number in (0, 3600]");
  r.seconds = 0.01;
  r.dram_mib = 16;
  r.name = "here";
  const calibrate_result x = run_calibrate(r);
  const json j = to_json(x);
  EXPECT_EQ(j, json::parse(x.document));
  EXPECT_EQ(j.at("gpus").at(0).at("name"), "here");
}

TEST(PerfReport, SiText) {
  EXPECT_EQ(si_text(1.5e9, "FLOP"), "1.5 GFLOP");
  EXPECT_EQ(si_text(12, "B"), "12 B");
}

}  // namespace
}  // namespace keel::perf
