// keel::perf LLM model — parameters, FLOPs, bytes, memory and roofline time of a decoder-only
// transformer, op by op, from a Hugging Face style config.json: one forward pass (prefill or
// decode), a full generation, a training step, quantized weights and KV cache, and tensor /
// pipeline / data / expert parallelism over N GPUs of one kind.
//
// Counting follows LLM-Viewer (Yuan et al., 2024) as summarized in the spec: a linear layer
// ic->oc costs 2*ic*oc FLOPs per token and reads its weights once per forward pass;
// attention prefill costs 2*s*k*d per head for QK^T and again for PV, s queries against k
// keys (k = s: the full square, the causal mask is not skipped, as in the published reference
// counts; with a sliding window W, k = min(s, W)); softmax 5, norms 7, activation 2 (+1 for a
// gated MLP's product) and residual add 1 FLOP per element. Activations are read and written
// once per op; with `flash` the attention ops are one fused op whose scores never reach DRAM.
// Decode processes one new token per sequence against `seq` cached tokens (min(seq, W) with
// a sliding window: the cache is a rolling buffer of W tokens, as in Mistral's reference
// implementation). The LM head runs on every token of the pass (calflops' convention;
// LLM-Viewer's prefill charges it for the last token only: see docs/perf.md).
//
// Memory: every analysis checks the per-GPU need (weights + KV cache + activations, and in
// training gradients + optimizer state) against the device with check_memory_fit(); a model
// that does not fit gets no latency (llm_report::seconds is nullopt, `memory.message` says
// what does not fit and by how much). Supported families: gpt2 (learned positions,
// LayerNorm, biased linears, tied head) and llama-like models (llama, mistral, qwen2 with q/k/v
// bias, mixtral MoE with top-k routing). Pure functions; thread-safe.
#pragma once

#include "keel/perf/dtype.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/memory_fit.hpp"
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
  std::int64_t sliding_window = 0;  // 0: every query sees every earlier key
  bool gated_mlp = true;            // SwiGLU: gate, up, down
  bool tied_embeddings = false;
  bool qkv_bias = false;
  bool linear_bias = false;        // every linear has a bias (gpt2)
  bool mlp_bias = false;           // llama's mlp_bias: gate/up/down have biases
  bool layer_norm = false;         // LayerNorm (weight + bias) instead of RMSNorm
  bool learned_positions = false;  // gpt2's wpe table
};

// Parses a config.json. `name` labels the result. Throws keel::parse_error for bad JSON and
// keel::invalid_argument for a missing field, an unsupported model_type or bad sizes.
// sliding_window is read for mistral and mixtral, and for qwen2 only when use_sliding_window
// is true (Qwen2's configs carry a window they do not use); null means none.
llm_config parse_llm_config(std::string_view json_text, const std::string& name);
// Names of the bundled configs (src/perf/data/configs, each sourced in SOURCES.md there).
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

// Weight / activation quantization. none: weights and activations in llm_options::weights.
// w8a8: int8 weights and int8 activations into the matmuls, on the int8 tensor rate.
// w4a16: 4-bit weights with one fp16 scale per `quant_group` weights, dequantized and
// multiplied at the activation type's rate. fp8: fp8 weights and activations on the fp8
// tensor rate; on a GPU without fp8 tensor cores the fp8 weights are upcast and multiplied
// at the activation type's rate (weight-only), and llm_report::compute_note says so.
enum class llm_quant { none, w8a8, w4a16, fp8 };
std::string_view name_of(llm_quant q) noexcept;  // "none", "w8a8", "w4a16", "fp8"
// Throws keel::invalid_argument listing the names.
llm_quant parse_llm_quant(std::string_view text);

// Optimizer of a training step. State per parameter (fp32): adam 8 bytes (m, v), sgd_momentum
// 4, sgd 0; plus a 4-byte fp32 master copy when the weights are narrower than fp32 (mixed
// precision: adam totals 16 bytes per parameter with weights and gradients, ZeRO's count).
enum class llm_optimizer { adam, sgd, sgd_momentum };
std::string_view name_of(llm_optimizer o) noexcept;  // "adam", "sgd", "sgd-momentum"
llm_optimizer parse_llm_optimizer(std::string_view text);

// Degrees of parallelism; the job uses tp*pp*dp GPUs (ep splits the experts over the tp*dp
// GPUs of a stage, as expert parallelism reuses the data-parallel ranks). tp divides the
// attention heads (K/V heads are split when tp divides them, else replicated) and the MLP;
// pp splits the layers into stages; dp splits the batch; ep divides the experts.
struct llm_parallel {
  int tp = 1, pp = 1, dp = 1, ep = 1;
  int gpus() const noexcept { return tp * pp * dp; }
};

struct llm_options {
  double batch = 1;
  double seq = 128;  // prefill: prompt length; decode: tokens already cached
  llm_phase phase = llm_phase::prefill;
  dtype weights = dtype::f16;  // weights and activations (before quantization)
  std::optional<dtype> kv;     // KV-cache storage (default: weights); f8 / i8 quantize it
  bool flash = false;
  bool tensor = true;
  llm_quant quant = llm_quant::none;
  double quant_group = 128;  // w4a16: weights per fp16 scale
  // Generation: prefill `seq` prompt tokens, then `generate` decode steps (0: one pass of
  // `phase`). Each decode step j sees seq + j cached tokens.
  double generate = 0;
  // Training step: forward + backward + optimizer step on `seq`-token sequences (prefill
  // shape); excludes `generate`.
  bool training = false;
  llm_optimizer optimizer = llm_optimizer::adam;
  llm_parallel parallel;
  // The link between the GPUs of a parallel job: NVLink when the GPU has it, else PCIe.
  // alpha: seconds per message (default: keel::comm's cost_model{}.alpha_shm).
  std::optional<double> link_alpha_s;
};

struct llm_op {
  std::string name;      // "q_proj", "qk_matmul", "lm_head", ...
  double count = 1;      // how many times per forward (number of layers for layer ops)
  op_cost cost;          // one instance, on one GPU
  bool matmul = false;   // runs on the matmul (tensor) rate; else the CUDA-core rate
  roofline_point point;  // one instance on the device
  std::string peak_key;
  double weight_bytes = 0;  // of cost.bytes: weights read
  double kv_bytes = 0;      // of cost.bytes: KV cache read or written
  double saved_bytes = 0;   // activations this op keeps for the backward pass
};

// One collective of a parallel job, per step (forward, or training step).
struct llm_comm {
  std::string name;        // "tp allreduce (attention out)", ...
  std::string collective;  // "allreduce", "allgather", "alltoall", "send"
  int ranks = 1;
  double bytes = 0;    // per call, the model's S (keel/comm/cost.hpp)
  double count = 0;    // calls per step
  double seconds = 0;  // per call, keel::comm's alpha-beta estimate on the link
  std::string algorithm;
};

struct llm_training {
  double forward_flops = 0, backward_flops = 0, optimizer_flops = 0;
  double forward_bytes = 0, backward_bytes = 0, optimizer_bytes = 0;
  double forward_seconds = 0, backward_seconds = 0, optimizer_seconds = 0;
  double tokens = 0;  // per step, whole job
};

struct llm_generation {
  double prompt = 0, generated = 0;  // tokens per sequence
  double prefill_flops = 0, decode_flops = 0;
  double prefill_bytes = 0, decode_bytes = 0;
  double ttft_seconds = 0;          // time to first token: the prefill
  double decode_seconds = 0;        // the `generated` decode steps
  double decode_tokens_per_s = 0;   // batch * generated / decode_seconds
  double overall_tokens_per_s = 0;  // batch * generated / (prefill + decode)
};

struct llm_report {
  llm_config config;
  llm_options options;
  llm_params params;
  std::vector<llm_op> ops;  // one forward pass on one GPU (the last decode step when generating)
  double total_flops = 0;   // of `ops`, whole job (per GPU x GPUs doing distinct work)
  double matmul_flops = 0;  // the part the reference counts (linears + attention matmuls)
  double total_bytes = 0;
  // Predicted wall time of what was asked (a pass, a generation, a training step), including
  // communication; nullopt when the model does not fit.
  std::optional<double> seconds;
  double compute_seconds = 0;  // sum of the ops' roofline times (no communication)
  double comm_seconds = 0;
  double kv_bytes_per_token = 0;  // whole model, all layers
  double kv_cache_bytes = 0;      // whole job at the largest context
  dtype matmul_dtype = dtype::f16;
  double weight_bytes_per_param = 2;
  std::string compute_note;  // which units run the matmuls, and why
  memory_fit memory;         // per GPU
  std::vector<llm_comm> comms;
  std::optional<llm_training> training;
  std::optional<llm_generation> generation;
};

// Throws keel::invalid_argument for non-positive batch/seq, negative generate, training with
// generate, degrees < 1, tp not dividing the heads (and the MLP width), pp above the layer
// count, dp above the batch, ep not dividing the experts (or ep > 1 on a dense model).
llm_report analyze_llm(const llm_config& c, const llm_options& o, const gpu_spec& device);

}  // namespace keel::perf
