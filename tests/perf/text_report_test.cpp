// keel/perf/text_report.hpp: the text `keel perf` and `keel gpus` print, line for line, from
// the same results as their JSON documents.
#include "keel/perf/text_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace keel::perf {
namespace {

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

std::string line(const std::string& text, std::size_t n) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) start = text.find('\n', start) + 1;
  return text.substr(start, text.find('\n', start) - start);
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(PerfText, CommasGroupDigits) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(6738415616.0), "6,738,415,616");
  EXPECT_EQ(with_commas(5354.4), "5,354");
}

TEST(PerfText, OpPrintsTheRoofline) {
  op_request r;
  r.kind = "gemm";
  r.mnk = {8192, 8192, 8192};
  EXPECT_EQ(to_text(run_op(r)),
            "gemm 8192x8192x8192, fp32, on h100-sxm (fp32 67 TFLOP/s; 3350 GB/s)\n"
            "  FLOPs            1.1 TFLOP\n"
            "  bytes            805.3 MB\n"
            "  intensity        1365 FLOP/byte (ridge point 20)\n"
            "  bound            compute\n"
            "  predicted time   16.41 ms (roofline lower bound)\n"
            "  fraction of peak 100%\n");
  op_request s;
  s.kind = "spmv";
  s.rows = 1000;
  s.cols = 500;
  s.nnz = 5000;
  s.x_reuse = false;
  const std::string text = to_text(run_op(s));
  EXPECT_EQ(line(text, 0),
            "CSR spmv 1000 rows, 5000 nonzeros (5.0 per row), fp32, on h100-sxm (fp32 67 TFLOP/s; "
            "3350 GB/s)");
  EXPECT_EQ(line(text, 4), "  bound            memory");
  EXPECT_EQ(line(text, 6), "  fraction of peak 0.735%");
}

TEST(PerfText, ExplainPrintsParagraphsThenSources) {
  explain_request r;
  r.op.kind = "gemm";
  r.op.mnk = {4096, 4096, 4096};
  r.op.dtype = "fp64";
  r.op.gpu = "h100-sxm";
  r.vs = "rtx-4090";
  const explain_result x = run_explain(r);
  const std::string text = to_text(x);
  EXPECT_EQ(line(text, 0), x.explanation.at(0));
  EXPECT_EQ(line(text, 1), "");
  EXPECT_EQ(lines(text), 2 * x.explanation.size() + 2);
  EXPECT_EQ(line(text, 2 * x.explanation.size()), "sources: h100-sxm: " + x.a.gpu.source_text());
  EXPECT_EQ(line(text, 2 * x.explanation.size() + 1),
            "         rtx-4090: " + x.b.gpu.source_text());
}

TEST(PerfText, LlmTableHasEveryOpAndTheChartPath) {
  llm_request r;
  r.config = "llama-2-7b";
  const llm_result x = run_llm(r);
  const std::string text = to_text(x);
  EXPECT_EQ(line(text, 0), "llama-2-7b prefill, batch 1, seq 128, bf16 (KV bf16) on h100-sxm");
  EXPECT_EQ(line(text, 1).rfind("parameters 6,738,415,616 (active per token ", 0), 0u) << text;
  EXPECT_EQ(line(text, 3), "matmuls in bf16 on bf16_tensor (989.5 TFLOP/s)");
  EXPECT_EQ(line(text, 4).rfind("memory fits: 13.5", 0), 0u) << text;
  EXPECT_EQ(line(text, 6).rfind("op (one instance)", 0), 0u);
  EXPECT_EQ(lines(text), 6 + 1 + x.report.ops.size() + 2);
  EXPECT_EQ(text.find("roofline chart written to"), std::string::npos);
  llm_result charted = x;
  charted.svg = "chart.svg";
  const std::string with = to_text(charted);
  EXPECT_EQ(with.substr(with.size() - 36), "roofline chart written to chart.svg\n");
}

TEST(PerfText, ModelShowsTheSlowestNodesOrAll) {
  model_request r;
  r.path = data_dir + "tiny.onnx";
  const model_result x = run_model(r);
  model_text_options top3;
  top3.top = 3;
  const std::string text = to_text(x, top3);
  EXPECT_EQ(line(text, 0), r.path + " (pytorch 1.13.0, opset 13) on h100-sxm");
  EXPECT_EQ(line(text, 1), "14 nodes, 5,354 parameters");
  EXPECT_NE(text.find("\nslowest nodes                    op                  MACs       bytes    "
                      "FLOP/B   bound    time us\n/Add                             Add           "
                      "        0     24.58 KB    0.0833  memory   0.007336\n"),
            std::string::npos)
      << text;
  // 8 lines of totals, memory, bound and fractions; the tree (header, root, 14 top-level nodes
  // and the 2 ops under conv and fc); 11 op types, 3 nodes.
  const std::size_t head = 8 + 1 + 1 + 17 + 1 + 1 + 11 + 1 + 1;
  EXPECT_EQ(lines(text), head + 3);
  EXPECT_EQ(line(text, 3).rfind("memory: fits: ", 0), 0u) << line(text, 3);
  EXPECT_EQ(line(text, 4).rfind("cannot be faster than ", 0), 0u) << line(text, 4);
  EXPECT_NE(line(text, 4).find(", expect about "), std::string::npos);
  EXPECT_EQ(line(text, 5).rfind("  gemm      x0.789 of the bound's rate: measured on h100-sxm", 0),
            0u)
      << line(text, 5);
  EXPECT_NE(text.find("\n  fc  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n    Gemm  "), std::string::npos) << text;
  model_text_options all;
  all.all_nodes = true;
  const std::string every = to_text(x, all);
  EXPECT_NE(every.find("\nnode    "), std::string::npos);
  EXPECT_EQ(lines(every), head + 14);
  model_text_options none;
  none.top = -1;
  EXPECT_EQ(lines(to_text(x, none)), head);
  model_text_options shallow;
  shallow.top = 0;
  shallow.depth = 0;  // the tree is its root only
  EXPECT_EQ(lines(to_text(x, shallow)), head - 16);
}

TEST(PerfText, CalibrationListsPeaksAndBandwidths) {
  calibrate_result x;
  x.value.cpu = "Test CPU";
  x.value.isa = "avx2+fma";
  x.value.threads = 2;
  x.value.fp32_gflops = 100.04;
  x.value.fp64_gflops = 50;
  x.value.dram_gbs = 12.34;
  memory_level l;
  l.bytes = 32768;
  l.bandwidth_gbs = 200;
  x.value.levels.push_back(l);
  x.dram_mib = 16;
  EXPECT_EQ(to_text(x),
            "Test CPU (2 threads, avx2+fma)\n"
            "  fp32 peak   100.0 GFLOP/s (FMA loop)\n"
            "  fp64 peak   50.0 GFLOP/s\n"
            "  triad     200.0 GB/s with a working set up to 32.77 KB\n"
            "  triad      12.3 GB/s from DRAM (16 MiB)\n");
  x.value.threads = 1;
  x.out = "cal.json";
  const std::string text = to_text(x);
  EXPECT_EQ(line(text, 0), "Test CPU (1 thread, avx2+fma)");
  EXPECT_EQ(line(text, 5), "device file written to cal.json");
}

TEST(PerfText, GpuListHasARowPerGpuAndTheLegend) {
  const gpu_list list = list_gpus(gpu_database::builtin(), "Hopper");
  const std::string text = to_text(list);
  EXPECT_EQ(line(text, 0).rfind("name                cc arch             fp64", 0), 0u) << text;
  EXPECT_EQ(lines(text), list.gpus.size() + 2);
  EXPECT_EQ(line(text, 1).rfind(list.gpus.at(0)->name, 0), 0u);
  EXPECT_EQ(line(text, list.gpus.size() + 1).rfind("TFLOP/s dense; /tc = tensor cores", 0), 0u);
}

TEST(PerfText, GpuShowEndsWithSources) {
  const gpu_spec& g = gpu_database::builtin().at("h100-sxm");
  const std::string text = to_text(g);
  EXPECT_EQ(line(text, 0), g.display + " (h100-sxm)");
  EXPECT_NE(text.find("\n  sources\n    "), std::string::npos);
  EXPECT_EQ(line(text, lines(text) - 1),
            "    " + g.sources.back().title + " <" + g.sources.back().url + ">");
}

TEST(PerfText, GpuCompareHasRatios) {
  const auto& db = gpu_database::builtin();
  const gpu_comparison c = compare_gpus(db.at("gtx-1050"), db.at("rtx-4090"));
  const std::string text = to_text(c);
  EXPECT_EQ(line(text, 0), "metric                           gtx-1050       rtx-4090      B/A");
  EXPECT_EQ(line(text, 1), "fp64                              0.05819          1.291   22.18x");
  EXPECT_EQ(line(text, 3), "fp16                              0.02909              -        -");
  EXPECT_EQ(lines(text), c.rows.size() + 3);
}

TEST(PerfText, SupportAnswersWithTheSource) {
  support_request r;
  r.gpu = "gtx-1050";
  r.cuda = "13.0";
  const std::string text = to_text(check_support(gpu_database::builtin(), r));
  EXPECT_EQ(line(text, 0),
            "no: CUDA 13.0-13.9 supports compute capability 7.5 through 12.1; gtx-1050 is "
            "compute capability 6.1 (Pascal), which it no longer targets");
  EXPECT_EQ(line(text, 1).rfind("source: CUDA Toolkit 13.0 Release Notes", 0), 0u);
}

TEST(PerfText, PickRanksTheTopWithReasons) {
  pick_request r;
  r.needs = {"bf16", "cuda=12.0"};
  const pick_result x = pick_gpus(gpu_database::builtin(), r);
  EXPECT_EQ(to_text(x, 2),
            "1. h100-sxm (H100 SXM5 80GB): bf16 tensor 989.5 TFLOP/s; CUDA 12.0 supports compute "
            "capability 9.0\n"
            "2. h200-sxm (H200 SXM 141GB): bf16 tensor 989.5 TFLOP/s; CUDA 12.0 supports compute "
            "capability 9.0\n"
            "ranked by bf16_tensor TFLOP/s, then lower price; " +
                std::to_string(x.ranked.size()) + " qualify, " + std::to_string(x.rejected.size()) +
                " rejected (--json lists why)\n");
  pick_result none;
  none.metric = "fp32 TFLOP/s";
  EXPECT_EQ(to_text(none, 5),
            "No GPU in the database meets all needs.\n"
            "ranked by fp32 TFLOP/s; 0 qualify, 0 rejected (--json lists why)\n");
}

}  // namespace
}  // namespace keel::perf
