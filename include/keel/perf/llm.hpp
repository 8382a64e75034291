// keel::perf LLM model — parameters, FLOPs, bytes and roofline time of a decoder-only
// transformer, op by op, from a Hugging Face style config.json.
//
// Counting follows LLM-Viewer (Yuan et al., 2024) as summarized in the spec: a linear layer
// ic->oc costs 2*ic*oc FLOPs per token and reads its weights once per forward pass;
// attention prefill costs 2*s^2*d per head for QK^T and again for PV (the full square: the
// causal mask is not skipped, as in the published reference counts); softmax 5, norms 7,
// activation 2 (+1 for a gated MLP's product) and residual add 1 FLOP per element.
// Activations are read and written once per op; with `flash` the attention ops are one fused
// op whose scores never reach DRAM. Decode processes one new token per sequence against
// `seq` cached tokens. Supported families: gpt2 (learned positions, LayerNorm, biased
// linears, tied head) and llama-like models (llama, mistral, qwen2 with q/k/v bias, mixtral
// MoE with top-k routing). Pure functions; thread-safe.
#pragma once

#include "keel/perf/dtype.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/roofline.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::perf {

struct llm_config {
  std::string name;
  std::string model_type;  // gpt2, llama, mistral, qwen2, mixtral
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;
  std::int64_t experts = 0;  // 0: dense MLP
  std::int64_t experts_per_token = 0;
  bool gated_mlp = true;  // SwiGLU: gate, up, down
  bool tied_embeddings = false;
  bool qkv_bias = false;
  bool linear_bias = false;        // every linear has a bias (gpt2)
  bool layer_norm = false;         // LayerNorm (weight + bias) instead of RMSNorm
  bool learned_positions = false;  // gpt2's wpe table
};

// Parses a config.json. `name` labels the result. Throws keel::parse_error for bad JSON and
// keel::invalid_argument for a missing field, an unsupported model_type or bad sizes.
llm_config parse_llm_config(std::string_view json_text, const std::string& name);
// Names of the bundled configs: gpt2, llama-2-7b, llama-3-8b, mistral-7b, qwen2-7b, mixtral-8x7b.
std::vector<std::string> bundled_llm_configs();
// A bundled config by name, or a config.json at that path. Throws invalid_argument / io_error.
llm_config load_llm_config(std::string_view name_or_path);

struct llm_params {
  double total = 0;      // every weight
  double active = 0;     // weights one token touches (MoE: top-k experts)
  double embedding = 0;  // token (and position) embedding tables
};
llm_params count_params(const llm_config& c);

enum class llm_phase { prefill, decode };

struct llm_options {
  double batch = 1;
  double seq = 128;  // prefill: prompt length; decode: tokens already cached
  llm_phase phase = llm_phase::prefill;
  dtype weights = dtype::f16;  // weights and activations
  std::optional<dtype> kv;     // KV-cache storage (default: weights)
  bool flash = false;
  bool tensor = true;
};

struct llm_op {
  std::string name;      // "q_proj", "qk_matmul", "lm_head", ...
  double count = 1;      // how many times per forward (number of layers for layer ops)
  op_cost cost;          // one instance
  bool matmul = false;   // runs on the matmul (tensor) rate; else the CUDA-core rate
  roofline_point point;  // one instance on the device
  std::string peak_key;
};

struct llm_report {
  llm_config config;
  llm_options options;
  llm_params params;
  std::vector<llm_op> ops;
  double total_flops = 0;
  double matmul_flops = 0;  // the part the reference counts (linears + attention matmuls)
  double total_bytes = 0;
  double seconds = 0;  // sum of the ops' roofline times
  double kv_bytes_per_token = 0;
};

// Throws keel::invalid_argument for non-positive batch/seq.
llm_report analyze_llm(const llm_config& c, const llm_options& o, const gpu_spec& device);

}  // namespace keel::perf
