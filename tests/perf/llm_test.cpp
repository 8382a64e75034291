// LLM counts against the published reference numbers of the spec.
#include "keel/perf/llm.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/svg.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace keel::perf {
namespace {

const gpu_spec& h100() { return gpu_database::builtin().at("h100-sxm"); }

TEST(Llm, BundlesTheSixConfigs) {
  const auto names = bundled_llm_configs();
  for (const char* n :
       {"gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b", "mixtral-8x7b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(Llm, ParameterCountsAreExact) {
  EXPECT_EQ(count_params(load_llm_config("llama-2-7b")).total, 6'738'415'616.0);
  EXPECT_EQ(count_params(load_llm_config("gpt2")).total, 124'439'808.0);
  EXPECT_EQ(count_params(load_llm_config("llama-3-8b")).total, 8'030'261'248.0);
  EXPECT_EQ(count_params(load_llm_config("mistral-7b")).total, 7'241'732'096.0);
  EXPECT_EQ(count_params(load_llm_config("qwen2-7b")).total, 7'615'616'512.0);
  const llm_params mixtral = count_params(load_llm_config("mixtral-8x7b"));
  EXPECT_EQ(mixtral.total, 46'702'792'704.0);
  EXPECT_EQ(mixtral.active, 12'879'925'248.0);  // 2 of 8 experts per token
}

TEST(Llm, Llama2PrefillMatchesTheReference) {
  // 2 * (6.738e9 params - 0.131e9 embedding) * 128 + 4 * 32 layers * 128^2 * 4096.
  llm_options o;
  o.batch = 1, o.seq = 128, o.weights = dtype::bf16;
  const llm_report r = analyze_llm(load_llm_config("llama-2-7b"), o, h100());
  EXPECT_NEAR(r.total_flops / 1700.06e9, 1.0, 0.005);
  const double linear =
      2.0 * (32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008) + 32000.0 * 4096) * 128;
  EXPECT_DOUBLE_EQ(r.matmul_flops, linear + 4.0 * 32 * 128 * 128 * 4096);
  EXPECT_EQ(r.params.total, 6'738'415'616.0);
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 2.0 * 32 * 4096 * 2);
  EXPECT_GT(r.seconds, 0);
}

TEST(Llm, DecodeIsMemoryBoundAndReadsTheWeightsOnce) {
  llm_options o;
  o.phase = llm_phase::decode, o.seq = 1024, o.weights = dtype::bf16;
  const llm_report r = analyze_llm(load_llm_config("llama-2-7b"), o, h100());
  // Bytes are at least the weights (2 bytes each), time at least weights / bandwidth.
  EXPECT_GT(r.total_bytes, 2 * 6.738e9);
  EXPECT_GT(r.seconds, 2 * 6.738e9 / 3.35e12);
  for (const llm_op& op : r.ops) EXPECT_EQ(op.point.limit, bound::memory) << op.name;
  // ~2 FLOPs per non-embedding parameter per token, plus attention over the cache.
  EXPECT_NEAR(r.total_flops / (2 * (6.738e9 - 0.131e9)), 1.0, 0.05);
  // An fp8 KV cache halves the cache bytes.
  o.kv = dtype::f8;
  EXPECT_DOUBLE_EQ(analyze_llm(load_llm_config("llama-2-7b"), o, h100()).kv_bytes_per_token,
                   r.kv_bytes_per_token / 2);
}

TEST(Llm, FlashRemovesTheScoreTraffic) {
  llm_options o;
  o.seq = 4096, o.weights = dtype::bf16;
  const llm_report plain = analyze_llm(load_llm_config("llama-3-8b"), o, h100());
  o.flash = true;
  const llm_report flash = analyze_llm(load_llm_config("llama-3-8b"), o, h100());
  EXPECT_LT(flash.total_bytes, plain.total_bytes);
  EXPECT_NEAR(flash.total_flops, plain.total_flops, 1.0);
}

TEST(Llm, RejectsBadConfigs) {
  EXPECT_THROW(parse_llm_config(R"({"model_type": "bert"})", "x"), invalid_argument);
  EXPECT_THROW(parse_llm_config(R"({"model_type": "llama", "hidden_size": 4096})", "x"),
               invalid_argument);
  EXPECT_THROW(parse_llm_config("{", "x"), parse_error);
  EXPECT_THROW(load_llm_config("no-such-model"), invalid_argument);
}

TEST(Svg, IsAWellFormedChart) {
  const std::string svg =
      roofline_svg("t <&>", 1e15, 3e12, {{"a", 10, 1e13}, {"b", 1000, 1e15}, {"bad", 0, 1}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("t &lt;&amp;&gt;"), std::string::npos);
  std::size_t circles = 0;
  for (std::size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1))
    ++circles;
  EXPECT_EQ(circles, 4u);  // two points, each with a legend dot; "bad" skipped
}

}  // namespace
}  // namespace keel::perf
