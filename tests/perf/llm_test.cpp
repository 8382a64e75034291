// LLM counts against the published reference numbers of the spec.
#include "keel/perf/llm.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/cost.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/svg.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>

namespace keel::perf {
namespace {

const gpu_spec& h100() { return gpu_database::builtin().at("h100-sxm"); }
const gpu_spec& gpu(const char* name) { return gpu_database::builtin().at(name); }

nlohmann::json golden(const char* file) {
  std::ifstream in(std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/" + file);
  return nlohmann::json::parse(in);
}

double sum_ops(const llm_report& r, const std::set<std::string>& names) {
  double f = 0;
  for (const llm_op& op : r.ops)
    if (names.contains(op.name)) f += op.count * op.cost.flops;
  return f;
}

TEST(Llm, BundlesTheTenConfigs) {
  const auto names = bundled_llm_configs();
  for (const char* n :
       {"gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b", "mixtral-8x7b",
        "llama-3.1-70b", "llama-3.2-1b", "mistral-nemo-12b", "qwen2.5-7b-instruct"}) {
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
  // Hand counts from the configs (src/perf/data/configs/SOURCES.md), matching the model cards.
  EXPECT_EQ(count_params(load_llm_config("llama-3.1-70b")).total, 70'553'706'496.0);  // 70.6B
  // Tied embeddings: the LM head is the embedding table.
  const llm_params small = count_params(load_llm_config("llama-3.2-1b"));
  EXPECT_EQ(small.total, 1'235'814'400.0);  // 1.24B
  EXPECT_EQ(small.embedding, 128256.0 * 2048);
  // head_dim 128 while hidden / heads is 160.
  EXPECT_EQ(count_params(load_llm_config("mistral-nemo-12b")).total, 12'247'782'400.0);  // 12.2B
  const llm_params qwen = count_params(load_llm_config("qwen2.5-7b-instruct"));
  EXPECT_EQ(qwen.total, 7'615'616'512.0);                                             // 7.61B
  EXPECT_NEAR((qwen.total - qwen.embedding - 152064.0 * 3584) / 6.53e9, 1.0, 0.001);  // non-emb.
}

TEST(Llm, ConfigsReadHeadDimWindowAndBiases) {
  EXPECT_EQ(load_llm_config("mistral-nemo-12b").head_dim, 128);
  EXPECT_EQ(load_llm_config("mistral-7b").sliding_window, 4096);
  EXPECT_EQ(load_llm_config("mistral-nemo-12b").sliding_window, 0);     // null
  EXPECT_EQ(load_llm_config("qwen2.5-7b-instruct").sliding_window, 0);  // use_sliding_window false
  const std::string qwen = R"({"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10,
      "sliding_window": 32, "use_sliding_window": true})";
  EXPECT_EQ(parse_llm_config(qwen, "q").sliding_window, 32);
  // llama's mlp_bias: gate and up get `intermediate` biases, down gets `hidden`.
  const std::string llama = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10, "mlp_bias": true})";
  const std::string plain = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10})";
  EXPECT_EQ(count_params(parse_llm_config(llama, "b")).total -
                count_params(parse_llm_config(plain, "p")).total,
            2 * 128 + 64);
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
  ASSERT_TRUE(r.seconds);
  EXPECT_GT(*r.seconds, 0);
  EXPECT_TRUE(r.memory.fits);
  EXPECT_DOUBLE_EQ(r.memory.need.weights, 2 * 6'738'415'616.0);
}

// calflops' published table: forward and forward + backward FLOPs of HF models at (1, 128).
TEST(Llm, MatchesCalflopsPublishedTable) {
  const nlohmann::json table = golden("calflops-llm.golden.json");
  for (const auto& m : table.at("models")) {
    const llm_config c = load_llm_config(m.at("config").get<std::string>());
    llm_options o;
    o.batch = m.at("batch"), o.seq = m.at("seq"), o.weights = dtype::bf16;
    const llm_report fwd = analyze_llm(c, o, h100());
    EXPECT_EQ(fwd.params.total, m.at("params").get<double>());
    EXPECT_NEAR(fwd.matmul_flops / (m.at("fwd_gflops").get<double>() * 1e9), 1.0, 0.005);
    EXPECT_NEAR(fwd.matmul_flops / 2 / (m.at("fwd_gmacs").get<double>() * 1e9), 1.0, 0.005);
    o.training = true;
    o.weights = dtype::f32;
    const llm_report step = analyze_llm(c, o, gpu("h200-sxm"));
    EXPECT_NEAR(step.matmul_flops / (m.at("fwd_bwd_gflops").get<double>() * 1e9), 1.0, 0.005);
  }
}

// LLM-Viewer's decode formulas, on the ops where both conventions agree.
TEST(Llm, DecodeMatchesLlmViewerFormulas) {
  const std::set<std::string> agreed = {"q_proj",        "k_proj",      "v_proj",    "o_proj",
                                        "gate_proj",     "up_proj",     "down_proj", "qk_matmul",
                                        "sv_matmul",     "softmax",     "attn_norm", "mlp_norm",
                                        "attn_residual", "mlp_residual"};
  const nlohmann::json decode = golden("llm-viewer-decode.golden.json");
  for (const auto& g : decode.at("cases")) {
    llm_options o;
    o.phase = llm_phase::decode;
    o.batch = g.at("batch"), o.seq = g.at("seq"), o.weights = dtype::bf16;
    const llm_report r = analyze_llm(load_llm_config(g.at("config").get<std::string>()), o, h100());
    EXPECT_NEAR(sum_ops(r, agreed) / g.at("decode_layer_ops").get<double>(), 1.0, 0.005)
        << g.at("config");
  }
}

// The training rule, backward = 2 x forward for every matmul, against PyTorch autograd's own
// count of a tiny Llama (tests/data/perf/llm_autograd.py).
TEST(Llm, TrainingMatchesAutograd) {
  const nlohmann::json a = golden("tiny-llama.autograd.json");
  const llm_config c =
      load_llm_config(std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/tiny-llama.json");
  EXPECT_EQ(count_params(c).total, a.at("params").get<double>());
  llm_options o;
  o.batch = a.at("batch"), o.seq = a.at("seq"), o.weights = dtype::f32;
  const double fwd = a.at("forward_matmul_flops").get<double>();
  const double bwd = a.at("backward_matmul_flops").get<double>();
  EXPECT_EQ(analyze_llm(c, o, h100()).matmul_flops, fwd);
  o.training = true;
  const llm_report r = analyze_llm(c, o, h100());
  EXPECT_EQ(r.matmul_flops, fwd + bwd);
  ASSERT_TRUE(r.training);
  EXPECT_EQ(r.training->backward_flops, 2 * r.training->forward_flops);
  // Adam in fp32: 14 FLOPs per parameter; reads g, m, v, p and writes m, v, p (28 bytes).
  EXPECT_EQ(r.training->optimizer_flops, 14 * a.at("params").get<double>());
  EXPECT_EQ(r.training->optimizer_bytes, 28 * a.at("params").get<double>());
}

TEST(Llm, TrainingMemoryIsSixteenBytesPerParameterWithAdam) {
  llm_options o;
  o.training = true, o.weights = dtype::bf16, o.batch = 1, o.seq = 512;
  const llm_report r = analyze_llm(load_llm_config("llama-2-7b"), o, h100());
  const double p = 6'738'415'616.0;
  // bf16 weights 2 + gradients 2 + fp32 m, v and master copy 12 (ZeRO's mixed-precision Adam).
  EXPECT_DOUBLE_EQ(r.memory.need.weights + r.memory.need.gradients + r.memory.need.optimizer,
                   16 * p);
  EXPECT_GT(r.memory.need.activations, 0);
  EXPECT_FALSE(r.memory.fits);  // 108 GB on an 80 GB H100
  EXPECT_FALSE(r.seconds);
  o.optimizer = llm_optimizer::sgd;
  const llm_report sgd = analyze_llm(load_llm_config("llama-2-7b"), o, h100());
  EXPECT_DOUBLE_EQ(sgd.memory.need.optimizer, 4 * p);  // only the fp32 master copy
  EXPECT_EQ(sgd.training->optimizer_flops, 2 * p);
}

TEST(Llm, DecodeIsMemoryBoundAndReadsTheWeightsOnce) {
  llm_options o;
  o.phase = llm_phase::decode, o.seq = 1024, o.weights = dtype::bf16;
  const llm_report r = analyze_llm(load_llm_config("llama-2-7b"), o, h100());
  // Bytes are at least the weights (2 bytes each), time at least weights / bandwidth.
  EXPECT_GT(r.total_bytes, 2 * 6.738e9);
  ASSERT_TRUE(r.seconds);
  EXPECT_GT(*r.seconds, 2 * 6.738e9 / 3.35e12);
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

// Models that do not fit get no latency, and the report says what and by how much.
TEST(Llm, ModelsThatDoNotFitGetNoLatency) {
  llm_options o;
  o.weights = dtype::bf16;
  const llm_report mixtral = analyze_llm(load_llm_config("mixtral-8x7b"), o, h100());
  EXPECT_FALSE(mixtral.memory.fits);
  EXPECT_FALSE(mixtral.seconds);
  EXPECT_DOUBLE_EQ(mixtral.memory.need.weights, 2 * 46'702'792'704.0);
  EXPECT_NEAR(mixtral.memory.shortfall, mixtral.memory.need.total() - 80.0 * (1 << 30), 1);
  EXPECT_EQ(
      mixtral.memory.message.rfind("does not fit: needs 93.45 GB on one GPU (weights 93.41 GB", 0),
      0u)
      << mixtral.memory.message;
  EXPECT_NE(mixtral.memory.message.find("h100-sxm has 85.9 GB, 7.546 GB short"), std::string::npos)
      << mixtral.memory.message;
  const llm_report llama = analyze_llm(load_llm_config("llama-2-7b"), o, gpu("gtx-1050"));
  EXPECT_FALSE(llama.memory.fits);
  EXPECT_FALSE(llama.seconds);
  EXPECT_NE(llama.memory.message.find("gtx-1050 has 2.147 GB"), std::string::npos)
      << llama.memory.message;
  // 4-bit weights bring Mixtral onto one H100; the KV cache of a long batch can push it out.
  o.quant = llm_quant::w4a16;
  EXPECT_TRUE(analyze_llm(load_llm_config("mixtral-8x7b"), o, h100()).seconds);
  o.phase = llm_phase::decode, o.batch = 64, o.seq = 32768;
  const llm_report kv = analyze_llm(load_llm_config("mixtral-8x7b"), o, h100());
  EXPECT_FALSE(kv.memory.fits);
  EXPECT_GT(kv.memory.need.kv_cache, kv.memory.need.weights);
}

TEST(Llm, SlidingWindowLimitsKeysAndCache) {
  const llm_config mistral = load_llm_config("mistral-7b");
  llm_options o;
  o.weights = dtype::bf16, o.phase = llm_phase::decode, o.seq = 16384, o.batch = 2;
  const llm_report r = analyze_llm(mistral, o, h100());
  // Each query reads the 4096 keys of the window, not 16384.
  EXPECT_DOUBLE_EQ(sum_ops(r, {"qk_matmul"}), 32 * 2.0 * (2 * 32 * 1 * 4096) * 128);
  EXPECT_DOUBLE_EQ(r.kv_cache_bytes, 2 * 4096 * r.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(r.memory.need.kv_cache, 2 * 4096 * 2.0 * 32 * 8 * 128 * 2);
  // Without a window (Mistral-Nemo) the cache holds every token.
  const llm_report nemo = analyze_llm(load_llm_config("mistral-nemo-12b"), o, h100());
  EXPECT_DOUBLE_EQ(nemo.kv_cache_bytes, 2 * 16384 * nemo.kv_bytes_per_token);
  // Prefill: s queries against min(s, W) keys each (the full-square convention).
  o.phase = llm_phase::prefill, o.batch = 1, o.seq = 8192;
  const llm_report p = analyze_llm(mistral, o, h100());
  EXPECT_DOUBLE_EQ(sum_ops(p, {"qk_matmul"}), 32 * 2.0 * (32 * 8192.0 * 4096) * 128);
}

TEST(Llm, GqaMqaAndMoeAgainstHandCounts) {
  llm_options o;
  o.weights = dtype::bf16, o.phase = llm_phase::decode, o.seq = 1000, o.batch = 1;
  // GQA: Llama-3-8B keeps 8 K/V heads of 128 for its 32 query heads.
  const llm_report g = analyze_llm(load_llm_config("llama-3-8b"), o, h100());
  EXPECT_DOUBLE_EQ(g.kv_bytes_per_token, 2.0 * 32 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(sum_ops(g, {"k_proj"}), 32 * 2.0 * 4096 * 1024);
  EXPECT_DOUBLE_EQ(sum_ops(g, {"q_proj"}), 32 * 2.0 * 4096 * 4096);
  // MQA: one K/V head.
  const std::string mqa = R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 8, "num_key_value_heads": 1, "intermediate_size": 512,
      "vocab_size": 100})";
  const llm_config m = parse_llm_config(mqa, "mqa");
  EXPECT_EQ(count_params(m).total,
            2 * (256.0 * 256 * 2 + 2 * 256 * 32 + 3 * 256 * 512 + 512) + 2 * 100 * 256 + 256);
  EXPECT_DOUBLE_EQ(analyze_llm(m, o, h100()).kv_bytes_per_token, 2.0 * 2 * 1 * 32 * 2);
  // MoE: one decode token reads 2 of Mixtral's 8 experts; a big batch reads all 8.
  o.quant = llm_quant::w4a16;
  const llm_report one = analyze_llm(load_llm_config("mixtral-8x7b"), o, h100());
  double expert_w = 0;
  for (const llm_op& op : one.ops)
    if (op.name == "expert_up_proj") expert_w = op.weight_bytes;
  EXPECT_DOUBLE_EQ(expert_w, 2 * 4096.0 * 14336 * one.weight_bytes_per_param);
  EXPECT_DOUBLE_EQ(sum_ops(one, {"expert_up_proj"}), 32 * 2.0 * 4096 * 14336 * 2);
  o.batch = 64;
  for (const llm_op& op : analyze_llm(load_llm_config("mixtral-8x7b"), o, h100()).ops)
    if (op.name == "expert_up_proj")
      EXPECT_DOUBLE_EQ(op.weight_bytes, 8 * 4096.0 * 14336 * one.weight_bytes_per_param);
}

TEST(Llm, GenerationIsPrefillPlusEveryDecodeStep) {
  const llm_config c = load_llm_config("llama-3-8b");
  llm_options o;
  o.weights = dtype::bf16, o.batch = 4, o.seq = 300, o.generate = 20;
  const llm_report g = analyze_llm(c, o, h100());
  ASSERT_TRUE(g.generation && g.seconds);
  llm_options p = o;
  p.generate = 0;
  const llm_report prefill = analyze_llm(c, p, h100());
  EXPECT_DOUBLE_EQ(g.generation->prefill_flops, prefill.total_flops);
  EXPECT_DOUBLE_EQ(g.generation->ttft_seconds, *prefill.seconds);
  double flops = 0, seconds = 0;
  p.phase = llm_phase::decode;
  for (int j = 0; j < 20; ++j) {
    p.seq = 300 + j;
    const llm_report d = analyze_llm(c, p, h100());
    flops += d.total_flops, seconds += *d.seconds;
  }
  EXPECT_NEAR(g.generation->decode_flops / flops, 1.0, 1e-12);
  EXPECT_NEAR(g.generation->decode_seconds / seconds, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(g.generation->decode_tokens_per_s, 4 * 20 / g.generation->decode_seconds);
  EXPECT_DOUBLE_EQ(*g.seconds, g.generation->ttft_seconds + g.generation->decode_seconds);
  // The cache at the end holds prompt + generated tokens.
  EXPECT_DOUBLE_EQ(g.kv_cache_bytes, 4 * 320 * g.kv_bytes_per_token);
  o.training = true;
  EXPECT_THROW(analyze_llm(c, o, h100()), invalid_argument);
}

TEST(Llm, QuantizationBytesAndUnits) {
  const llm_config c = load_llm_config("llama-2-7b");
  llm_options o;
  o.weights = dtype::bf16, o.phase = llm_phase::decode, o.seq = 512;
  const llm_report bf16 = analyze_llm(c, o, h100());
  o.quant = llm_quant::w8a8;
  const llm_report w8 = analyze_llm(c, o, h100());
  EXPECT_EQ(w8.matmul_dtype, dtype::i8);
  for (const llm_op& op : w8.ops)
    if (op.name == "q_proj") EXPECT_EQ(op.peak_key, "int8_tensor");
  EXPECT_DOUBLE_EQ(w8.weight_bytes_per_param, 1);
  o.quant = llm_quant::w4a16;
  const llm_report w4 = analyze_llm(c, o, h100());
  EXPECT_DOUBLE_EQ(w4.weight_bytes_per_param, 0.5 + 2.0 / 128);  // fp16 scale per 128
  EXPECT_EQ(w4.matmul_dtype, dtype::bf16);
  // Linear weights shrink; embedding and LM head stay bf16.
  const double linear = 32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
  EXPECT_DOUBLE_EQ(bf16.memory.need.weights - w4.memory.need.weights,
                   linear * (2 - w4.weight_bytes_per_param));
  EXPECT_LT(*w4.seconds, *bf16.seconds);  // decode is weight-bandwidth bound
  // fp8: the fp8 tensor rate on an H100; weight-only on an RTX 3090, which has no fp8 units.
  o.quant = llm_quant::fp8;
  const llm_report h = analyze_llm(c, o, h100());
  EXPECT_EQ(h.matmul_dtype, dtype::f8);
  for (const llm_op& op : h.ops)
    if (op.name == "q_proj") EXPECT_EQ(op.peak_key, "fp8_tensor");
  const llm_report a = analyze_llm(c, o, gpu("rtx-3090"));
  EXPECT_EQ(a.matmul_dtype, dtype::bf16);
  EXPECT_NE(a.compute_note.find("rtx-3090 has no fp8 tensor cores"), std::string::npos)
      << a.compute_note;
  EXPECT_DOUBLE_EQ(a.weight_bytes_per_param, 1);
  // KV cache in int8 / fp8: half the bf16 bytes.
  o.quant = llm_quant::none, o.kv = dtype::i8;
  EXPECT_DOUBLE_EQ(analyze_llm(c, o, h100()).kv_bytes_per_token, bf16.kv_bytes_per_token / 2);
  EXPECT_THROW(parse_llm_quant("int3"), invalid_argument);
  EXPECT_EQ(parse_llm_quant("W4A16"), llm_quant::w4a16);
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

namespace keel::perf {
namespace {

// Tensor parallelism: per-GPU weights are a tp-th of the linears, and the collectives are
// timed by keel::comm's alpha-beta model on the GPU's NVLink.
TEST(LlmParallel, TensorParallelSplitsWeightsAndTimesAllreduces) {
  const llm_config c = load_llm_config("llama-3.1-70b");
  llm_options o;
  o.weights = dtype::bf16, o.batch = 1, o.seq = 1024;
  const llm_report one = analyze_llm(c, o, h100());
  EXPECT_FALSE(one.memory.fits);  // 141 GB of bf16 weights
  o.parallel.tp = 8;
  const llm_report r = analyze_llm(c, o, h100());
  ASSERT_TRUE(r.memory.fits) << r.memory.message;
  const double norms = 80 * 2 * 8192.0 + 8192;  // replicated on every GPU
  EXPECT_NEAR(r.memory.need.weights, (2 * 70'553'706'496.0 - 2 * norms) / 8 + 2 * norms, 1);
  // The matmuls are split; norms and residual adds are replicated on every GPU.
  EXPECT_NEAR(r.matmul_flops / one.matmul_flops, 1.0, 1e-12);
  EXPECT_GT(r.total_flops, one.total_flops);
  const llm_comm* attn = nullptr;
  for (const llm_comm& x : r.comms)
    if (x.name == "tp allreduce: attention output") attn = &x;
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->ranks, 8);
  EXPECT_EQ(attn->count, 80);
  EXPECT_DOUBLE_EQ(attn->bytes, 1024 * 8192.0 * 2);
  comm::link_model link;
  link.alpha = comm::cost_model{}.alpha_shm;
  link.beta = 1 / (*h100().nvlink_gbs / 2 * 1e9);
  link.gamma = 3 / h100().bandwidth_bytes_per_s();
  EXPECT_DOUBLE_EQ(
      attn->seconds,
      comm::estimate_collective(comm::collective::allreduce, 8, attn->bytes, link).seconds);
  EXPECT_GT(r.comm_seconds, 0);
  EXPECT_DOUBLE_EQ(*r.seconds, r.compute_seconds + r.comm_seconds);
  o.parallel.tp = 3;  // does not divide 64 heads
  EXPECT_THROW(analyze_llm(c, o, h100()), invalid_argument);
}

TEST(LlmParallel, DataPipelineAndExpertParallel) {
  llm_options o;
  o.weights = dtype::bf16, o.batch = 8, o.seq = 2048, o.training = true;
  o.parallel.dp = 4, o.parallel.pp = 2;
  const llm_report r = analyze_llm(load_llm_config("llama-3-8b"), o, h100());
  bool grads = false, sends = false;
  for (const llm_comm& x : r.comms) {
    if (x.name == "dp allreduce: gradients") {
      grads = true;
      EXPECT_EQ(x.ranks, 4);
      EXPECT_DOUBLE_EQ(x.bytes, r.memory.need.gradients);
    }
    if (x.collective == "send") {
      sends = true;
      EXPECT_EQ(x.count, 2);  // forward + backward
    }
  }
  EXPECT_TRUE(grads && sends);
  // Expert parallel: Mixtral's experts over 4 data-parallel GPUs, 2 alltoalls per layer.
  llm_options e;
  e.weights = dtype::bf16, e.batch = 4, e.seq = 512;
  e.parallel.dp = 4, e.parallel.ep = 4;
  const llm_report m = analyze_llm(load_llm_config("mixtral-8x7b"), e, h100());
  EXPECT_TRUE(m.memory.fits) << m.memory.message;
  bool a2a = false;
  for (const llm_comm& x : m.comms)
    if (x.collective == "alltoall") {
      a2a = true;
      EXPECT_EQ(x.count, 64);
    }
  EXPECT_TRUE(a2a);
  e.parallel.ep = 3;
  EXPECT_THROW(analyze_llm(load_llm_config("mixtral-8x7b"), e, h100()), invalid_argument);
}

}  // namespace
}  // namespace keel::perf
