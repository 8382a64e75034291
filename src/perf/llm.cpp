#include "keel/perf/llm.hpp"

#include "embedded_data.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/cost.hpp"
#include "keel/core/enum_names.hpp"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/json_value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace keel::perf {
namespace {

using nlohmann::json;

std::int64_t get_int(const json& j, std::initializer_list<const char*> keys,
                     const std::string& name, std::optional<std::int64_t> fallback = std::nullopt) {
  for (const char* k : keys) {
    if (j.contains(k) && !j[k].is_null()) {
      if (!j[k].is_number_integer() || j[k].get<std::int64_t>() <= 0) {
        throw invalid_argument(fmt::format("{}: '{}' must be a positive integer", name, k));
      }
      return j[k].get<std::int64_t>();
    }
  }
  if (fallback) return *fallback;
  throw invalid_argument(fmt::format("{}: config has no '{}'", name, *keys.begin()));
}

}  // namespace

llm_config parse_llm_config(std::string_view json_text, const std::string& name) {
  const json j = parse_json(json_text, name);
  if (!j.is_object()) throw invalid_argument(name + ": a config.json is a JSON object");
  llm_config c;
  c.name = name;
  c.model_type = j.value("model_type", "");
  if (c.model_type == "gpt2") {
    c.hidden = get_int(j, {"n_embd"}, name);
    c.layers = get_int(j, {"n_layer"}, name);
    c.heads = get_int(j, {"n_head"}, name);
    c.kv_heads = c.heads;
    c.intermediate = get_int(j, {"n_inner"}, name, 4 * c.hidden);
    c.vocab = get_int(j, {"vocab_size"}, name);
    c.max_positions = get_int(j, {"n_positions"}, name);
    c.gated_mlp = false;
    c.tied_embeddings = j.value("tie_word_embeddings", true);
    c.linear_bias = true;
    c.layer_norm = true;
    c.learned_positions = true;
  } else if (c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "qwen2" ||
             c.model_type == "mixtral") {
    c.hidden = get_int(j, {"hidden_size"}, name);
    c.layers = get_int(j, {"num_hidden_layers"}, name);
    c.heads = get_int(j, {"num_attention_heads"}, name);
    c.kv_heads = get_int(j, {"num_key_value_heads"}, name, c.heads);
    c.intermediate = get_int(j, {"intermediate_size"}, name);
    c.vocab = get_int(j, {"vocab_size"}, name);
    c.max_positions = get_int(j, {"max_position_embeddings"}, name, 0);
    c.tied_embeddings = j.value("tie_word_embeddings", false);
    // Qwen2 puts biases on q/k/v (its modeling code; the config has no switch for it).
    c.qkv_bias = c.model_type == "qwen2" || j.value("attention_bias", false);
    c.mlp_bias = j.value("mlp_bias", false);
    // Mistral and Mixtral attend within a window when the config has one (null: none);
    // Qwen2 configs carry a window that only use_sliding_window switches on.
    const bool windowed = c.model_type == "mistral" || c.model_type == "mixtral" ||
                          (c.model_type == "qwen2" && j.value("use_sliding_window", false));
    if (windowed && j.contains("sliding_window") && !j["sliding_window"].is_null())
      c.sliding_window = get_int(j, {"sliding_window"}, name);
    if (c.model_type == "mixtral") {
      c.experts = get_int(j, {"num_local_experts"}, name);
      c.experts_per_token = get_int(j, {"num_experts_per_tok"}, name);
      if (c.experts_per_token > c.experts)
        throw invalid_argument(name + ": more experts per token than experts");
    }
  } else {
    throw invalid_argument(
        fmt::format("{}: unsupported model_type '{}' (gpt2, llama, mistral, qwen2, mixtral)", name,
                    c.model_type));
  }
  c.head_dim = get_int(j, {"head_dim"}, name, c.hidden / c.heads);
  if (c.heads % c.kv_heads != 0)
    throw invalid_argument(name + ": kv heads must divide attention heads");
  return c;
}

std::vector<std::string> bundled_llm_configs() {
  std::vector<std::string> names;
  for (const auto& f : detail::embedded_llm_configs()) names.emplace_back(f.name);
  return names;
}

llm_config load_llm_config(std::string_view name_or_path) {
  for (const auto& f : detail::embedded_llm_configs()) {
    if (f.name == name_or_path) return parse_llm_config(f.text, std::string(f.name));
  }
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string names;
    for (const auto& n : bundled_llm_configs()) names += (names.empty() ? "" : ", ") + n;
    throw invalid_argument(fmt::format(
        "unknown model config '{}' (bundled: {}; or a config.json path)", name_or_path, names));
  }
  const std::string text = read_input_file(path.string());
  return parse_llm_config(text, path.stem().string());
}

namespace {

constexpr enum_entry<llm_quant> k_quant_entries[] = {{llm_quant::none, "none"},
                                                     {llm_quant::w8a8, "w8a8"},
                                                     {llm_quant::w4a16, "w4a16"},
                                                     {llm_quant::fp8, "fp8"}};
constexpr enum_names<llm_quant> k_quant_names{"quantization", k_quant_entries, name_case::ignore};
constexpr enum_entry<llm_optimizer> k_optimizer_entries[] = {
    {llm_optimizer::adam, "adam"},
    {llm_optimizer::sgd, "sgd"},
    {llm_optimizer::sgd_momentum, "sgd-momentum"},
    {llm_optimizer::adam, "adamw"}};
constexpr enum_names<llm_optimizer> k_optimizer_names{"optimizer", k_optimizer_entries,
                                                      name_case::ignore};

}  // namespace

std::string_view name_of(llm_quant q) noexcept { return k_quant_names.name(q); }
llm_quant parse_llm_quant(std::string_view text) { return k_quant_names.parse(text); }
std::string_view name_of(llm_optimizer o) noexcept { return k_optimizer_names.name(o); }
llm_optimizer parse_llm_optimizer(std::string_view text) { return k_optimizer_names.parse(text); }

namespace {

// Parameter counts of the parts of one layer and of the rest, split by what quantization
// touches (the linear weights) and what it leaves in the activation type (biases, norms,
// router, embedding, LM head).
struct layer_params {
  double attn_linear = 0, attn_other = 0;      // q/k/v/o weights; their biases
  double expert_linear = 0, expert_other = 0;  // one expert (or the dense MLP)
  double router = 0, norms = 0;
};

layer_params layer_parts(const llm_config& c, double tp, double kv_split) {
  const double h = static_cast<double>(c.hidden);
  const double q = static_cast<double>(c.heads * c.head_dim) / tp;
  const double kv = static_cast<double>(c.kv_heads * c.head_dim) / kv_split;
  const double i = static_cast<double>(c.intermediate) / tp;
  layer_params p;
  p.attn_linear = h * q + 2 * h * kv + q * h;
  if (c.qkv_bias || c.linear_bias) p.attn_other += q + 2 * kv;
  if (c.linear_bias) p.attn_other += h;  // o_proj's bias (replicated under tp)
  p.expert_linear = c.gated_mlp ? 3 * h * i : 2 * h * i;
  if (c.linear_bias || c.mlp_bias) p.expert_other += (c.gated_mlp ? 2 * i : i) + h;
  p.router = c.experts ? h * static_cast<double>(c.experts) : 0;
  p.norms = 2 * (c.layer_norm ? 2 * h : h);
  return p;
}

}  // namespace

llm_params count_params(const llm_config& c) {
  const layer_params p = layer_parts(c, 1, 1);
  const double h = static_cast<double>(c.hidden);
  const double E = static_cast<double>(c.experts);
  const double expert = p.expert_linear + p.expert_other;
  const double attn = p.attn_linear + p.attn_other;
  const double experts_total = c.experts ? expert * E : expert;
  const double experts_active =
      c.experts ? expert * static_cast<double>(c.experts_per_token) : expert;
  const double final_norm = c.layer_norm ? 2 * h : h;
  llm_params r;
  r.embedding = static_cast<double>(c.vocab) * h + (c.learned_positions ? c.max_positions * h : 0);
  const double head = c.tied_embeddings ? 0 : static_cast<double>(c.vocab) * h;
  const double L = static_cast<double>(c.layers);
  r.total = r.embedding + head + final_norm + L * (attn + experts_total + p.router + p.norms);
  r.active = r.embedding + head + final_norm + L * (attn + experts_active + p.router + p.norms);
  return r;
}

namespace {

// Everything one forward pass needs, resolved once from the config, the options and the GPU.
struct setup {
  const llm_config* c = nullptr;
  const llm_options* o = nullptr;
  const gpu_spec* device = nullptr;
  double a = 2;     // activation bytes per element
  double a_mm = 2;  // bytes per element of a matmul's input activations
  double w = 2;     // bytes per linear weight
  double kvb = 2;   // bytes per KV-cache element
  dtype mm = dtype::f16;
  double tp = 1, pp = 1, dp = 1, ep = 1;
  double B = 1;                             // sequences per data-parallel replica
  double H = 0, nkv = 0, i = 0, vocab = 0;  // per GPU
  double kv_split = 1;
  peak_rate matmul_peak, vector_peak;
  std::string note;
};

setup make_setup(const llm_config& c, const llm_options& o, const gpu_spec& device) {
  setup s;
  s.c = &c;
  s.o = &o;
  s.device = &device;
  s.a = bytes_of(o.weights);
  s.kvb = bytes_of(o.kv.value_or(o.weights));
  s.mm = o.weights;
  s.a_mm = s.a;
  s.w = s.a;
  switch (o.quant) {
    case llm_quant::none: break;
    case llm_quant::w8a8: s.mm = dtype::i8, s.a_mm = 1, s.w = 1; break;
    case llm_quant::w4a16: s.w = 0.5 + 2.0 / o.quant_group; break;
    case llm_quant::fp8:
      s.w = 1;
      if (device.rate("fp8_tensor") && o.tensor) {
        s.mm = dtype::f8, s.a_mm = 1;
      } else {
        s.note = fmt::format(
            "{} has no fp8 tensor cores{}: the fp8 weights are upcast and multiplied at the {} "
            "rate (weight-only fp8)",
            device.name, o.tensor ? "" : " in use (--no-tensor)", name_of(o.weights));
      }
      break;
  }
  const llm_parallel& par = o.parallel;
  s.tp = par.tp, s.pp = par.pp, s.dp = par.dp, s.ep = par.ep;
  s.B = o.batch / s.dp;
  s.H = static_cast<double>(c.heads) / s.tp;
  s.kv_split = c.kv_heads % par.tp == 0 ? s.tp : static_cast<double>(c.kv_heads);
  s.nkv = static_cast<double>(c.kv_heads) / s.kv_split;
  s.i = static_cast<double>(c.intermediate) / s.tp;
  s.vocab = std::ceil(static_cast<double>(c.vocab) / s.tp);
  s.matmul_peak = device.peak(s.mm, o.tensor);
  s.vector_peak = device.peak(o.weights, false);
  const std::string unit =
      fmt::format("matmuls in {} on {} ({:g} T{}/s{}{})", name_of(s.mm), s.matmul_peak.key,
                  s.matmul_peak.tflops, s.mm == dtype::i8 ? "OP" : "FLOP",
                  s.matmul_peak.note.empty() ? "" : ", ", s.matmul_peak.note);
  s.note = s.note.empty() ? unit : s.note + "; " + unit;
  return s;
}

struct pass {
  std::vector<llm_op> ops;
  double flops = 0, matmul_flops = 0, bytes = 0, seconds = 0;
  double activation_peak = 0;  // largest op working set (activations only)
  double saved = 0;            // activations kept for backward, whole pass on one GPU
};

// One forward pass on one GPU: `q_rows` new tokens per sequence against `ctx` keys.
pass forward(const setup& s, llm_phase phase, double seq) {
  const llm_config& c = *s.c;
  const llm_options& o = *s.o;
  pass p;
  const bool prefill = phase == llm_phase::prefill;
  const double a = s.a, w = s.a, lw = s.w, kvb = s.kvb, B = s.B;
  const double T = prefill ? B * seq : B;  // tokens processed in this pass
  const double h = static_cast<double>(c.hidden);
  const double H = s.H, nkv = s.nkv, i = s.i;
  const double d = static_cast<double>(c.head_dim);
  const double L = static_cast<double>(c.layers);
  const bool bias = c.linear_bias;
  const double window = c.sliding_window > 0 ? static_cast<double>(c.sliding_window) : seq;

  auto add = [&](std::string name, double count, op_cost cost, bool matmul, double weights,
                 double kv, double saved) {
    p.ops.push_back({std::move(name), count, cost, matmul, {}, {}, weights, kv, saved});
  };
  // A linear ic->oc over `tokens` tokens; `out_bytes` per output element.
  auto linear = [&](std::string name, double count, double ic, double oc, double tokens,
                    bool has_bias, double out_bytes, double weight_sets = 1, double kv_out = 0) {
    const double weights = weight_sets * (ic * oc * lw + (has_bias ? oc * a : 0));
    op_cost cost{2 * ic * oc * tokens + (has_bias ? oc * tokens : 0),
                 weights + tokens * ic * s.a_mm + tokens * oc * out_bytes};
    add(std::move(name), count, cost, true, weights, kv_out, tokens * ic * s.a_mm);
  };
  auto norm = [&](std::string name, double count) {
    const double weights = (c.layer_norm ? 2 : 1) * h * w;
    add(std::move(name), count, {7 * T * h, 2 * T * h * a + weights}, false, weights, 0, T * h * a);
  };

  // Embedding lookup (and gpt2's position add): the rows read, not the table.
  add("embedding", 1,
      {c.learned_positions ? T * h : 0, T * h * w * (c.learned_positions ? 2 : 1) + T * h * a},
      false, T * h * w * (c.learned_positions ? 2 : 1), 0, 0);

  norm("attn_norm", L);
  linear("q_proj", L, h, H * d, T, bias || c.qkv_bias, a);
  // k and v are written to the KV cache.
  linear("k_proj", L, h, nkv * d, T, bias || c.qkv_bias, kvb, 1, T * nkv * d * kvb);
  linear("v_proj", L, h, nkv * d, T, bias || c.qkv_bias, kvb, 1, T * nkv * d * kvb);
  const double kv_len = std::min(seq, window);  // keys each query attends to
  const double q_rows = prefill ? seq : 1;      // queries per sequence
  const double scores = B * H * q_rows * kv_len;
  const double q_bytes = B * q_rows * H * d * a;
  // Keys read: prefill reads the keys it just wrote; decode reads the cache.
  const double k_bytes = B * (prefill ? seq : kv_len) * nkv * d * kvb;
  if (o.flash) {
    add("attention (fused)", L, {4 * scores * d + 5 * scores, 2 * q_bytes + 2 * k_bytes}, true, 0,
        2 * k_bytes, 2 * q_bytes + 2 * k_bytes);
  } else {
    add("qk_matmul", L, {2 * scores * d, q_bytes + k_bytes + scores * a}, true, 0, k_bytes,
        q_bytes + k_bytes);
    add("softmax", L, {5 * scores, 2 * scores * a}, false, 0, 0, scores * a);
    add("sv_matmul", L, {2 * scores * d, scores * a + k_bytes + q_bytes}, true, 0, k_bytes,
        scores * a + k_bytes);
  }
  linear("o_proj", L, H * d, h, T, bias, a);
  add("attn_residual", L, {T * h, 3 * T * h * a}, false, 0, 0, 0);
  norm("mlp_norm", L);
  const bool mlp_bias = bias || c.mlp_bias;
  if (c.experts) {
    const double E = static_cast<double>(c.experts);
    const double E_gpu = E / s.ep;  // experts this GPU holds
    const double k = static_cast<double>(c.experts_per_token);
    // Balanced routing: each GPU serves as many token-expert pairs as its replica routes.
    const double routed = T * k;
    const double touched = std::min(E_gpu, routed);  // experts whose weights are read
    const double router_w = h * E * w;
    add("router", L, {2 * h * E * T, router_w + T * h * a + T * E * a}, true, router_w, 0,
        T * h * a);
    linear("expert_gate_proj", L, h, i, routed, mlp_bias, a, touched);
    linear("expert_up_proj", L, h, i, routed, mlp_bias, a, touched);
    add("expert_act_mul", L, {3 * routed * i, 3 * routed * i * a}, false, 0, 0, 2 * routed * i * a);
    linear("expert_down_proj", L, i, h, routed, mlp_bias, a, touched);
    add("expert_combine", L, {2 * routed * h, routed * h * a + T * h * a}, false, 0, 0,
        routed * h * a);
  } else if (c.gated_mlp) {
    linear("gate_proj", L, h, i, T, mlp_bias, a);
    linear("up_proj", L, h, i, T, mlp_bias, a);
    add("act_mul", L, {3 * T * i, 3 * T * i * a}, false, 0, 0, 2 * T * i * a);
    linear("down_proj", L, i, h, T, mlp_bias, a);
  } else {
    linear("fc_in", L, h, i, T, mlp_bias, a);
    add("activation", L, {2 * T * i, 2 * T * i * a}, false, 0, 0, T * i * a);
    linear("fc_out", L, i, h, T, mlp_bias, a);
  }
  add("mlp_residual", L, {T * h, 3 * T * h * a}, false, 0, 0, 0);
  norm("final_norm", 1);
  {
    // The LM head stays in the activation type under weight quantization.
    const double weights = h * s.vocab * w;
    add("lm_head", 1, {2 * h * s.vocab * T, weights + T * h * a + T * s.vocab * a}, true, weights,
        0, T * h * a + T * s.vocab * a);
  }

  for (llm_op& op : p.ops) {
    const peak_rate& pk = op.matmul ? s.matmul_peak : s.vector_peak;
    op.peak_key = pk.key;
    op.point = evaluate(op.cost, pk.tflops * 1e12, s.device->bandwidth_for(op.cost.bytes));
    p.flops += op.count * op.cost.flops;
    if (op.matmul) p.matmul_flops += op.count * op.cost.flops;
    p.bytes += op.count * op.cost.bytes;
    p.seconds += op.count * op.point.seconds;
    p.activation_peak = std::max(p.activation_peak, op.cost.bytes - op.weight_bytes - op.kv_bytes);
    p.saved += op.count * op.saved_bytes;
  }
  if (o.flash) p.matmul_flops -= L * 5 * scores;  // the fused op's softmax share
  return p;
}

void check_options(const llm_config& c, const llm_options& o) {
  if (!(o.batch > 0) || !(o.seq > 0)) throw invalid_argument("batch and seq must be positive");
  if (!(o.generate >= 0) || !std::isfinite(o.generate))
    throw invalid_argument("generated tokens must be >= 0");
  if (o.training && o.generate > 0)
    throw invalid_argument("a training step does not generate: give --train or --generate");
  if (o.training && o.quant != llm_quant::none)
    throw invalid_argument("training with quantized weights is not modelled (use --quant none)");
  if (!(o.quant_group >= 1)) throw invalid_argument("quantization group must be >= 1");
  const llm_parallel& p = o.parallel;
  for (auto [v, what] :
       {std::pair{p.tp, "tensor"}, {p.pp, "pipeline"}, {p.dp, "data"}, {p.ep, "expert"}}) {
    if (v < 1) throw invalid_argument(fmt::format("{} parallel degree must be >= 1", what));
  }
  if (c.heads % p.tp != 0)
    throw invalid_argument(
        fmt::format("--tp {} must divide the {} attention heads", p.tp, c.heads));
  if (c.intermediate % p.tp != 0)
    throw invalid_argument(
        fmt::format("--tp {} must divide the MLP width {}", p.tp, c.intermediate));
  if (c.kv_heads % p.tp != 0 && p.tp % c.kv_heads != 0)
    throw invalid_argument(
        fmt::format("--tp {} and the {} KV heads must divide one another", p.tp, c.kv_heads));
  if (p.pp > c.layers)
    throw invalid_argument(fmt::format("--pp {} exceeds the {} layers", p.pp, c.layers));
  if (p.dp > o.batch)
    throw invalid_argument(fmt::format("--dp {} exceeds the batch {}", p.dp, o.batch));
  if (p.ep > 1) {
    if (!c.experts) throw invalid_argument(c.name + " has no experts: --ep must be 1");
    if (c.experts % p.ep != 0)
      throw invalid_argument(fmt::format("--ep {} must divide the {} experts", p.ep, c.experts));
    if (p.dp % p.ep != 0)
      throw invalid_argument(fmt::format(
          "--ep {} must divide --dp {} (experts are spread over data-parallel ranks)", p.ep, p.dp));
  }
}

// Weight bytes one GPU holds: the heaviest pipeline stage.
double weight_bytes_per_gpu(const setup& s) {
  const llm_config& c = *s.c;
  const layer_params lp = layer_parts(c, s.tp, s.kv_split);
  const double a = s.a;
  const double E_gpu = c.experts ? static_cast<double>(c.experts) / s.ep : 1;
  const double layer = lp.attn_linear * s.w + lp.attn_other * a +
                       E_gpu * (lp.expert_linear * s.w + lp.expert_other * a) + lp.router * a +
                       lp.norms * a;
  const double h = static_cast<double>(c.hidden);
  const double table = s.vocab * h * a;  // vocab-parallel under tp
  const double positions = c.learned_positions ? static_cast<double>(c.max_positions) * h * a : 0;
  const double final_norm = (c.layer_norm ? 2 : 1) * h * a;
  const double head = c.tied_embeddings ? 0 : table;
  const double layers = std::ceil(static_cast<double>(c.layers) / s.pp);
  if (s.pp == 1) return layers * layer + table + positions + final_norm + head;
  // First stage: embedding; last: final norm and head (tied: its own copy of the table).
  const double first = layers * layer + table + positions;
  const double last = layers * layer + final_norm + table;
  return std::max(first, last);
}

double kv_bytes_per_gpu(const setup& s, double context) {
  const llm_config& c = *s.c;
  const double kept =
      c.sliding_window > 0 ? std::min(context, static_cast<double>(c.sliding_window)) : context;
  const double layers = std::ceil(static_cast<double>(c.layers) / s.pp);
  return s.B * kept * 2 * s.nkv * static_cast<double>(c.head_dim) * s.kvb * layers;
}

struct link {
  comm::link_model model;
  std::string name;
};

link gpu_link(const gpu_spec& g, const llm_options& o) {
  link l;
  double gbs = 0;
  if (g.nvlink_gbs && *g.nvlink_gbs > 0) {
    gbs = *g.nvlink_gbs / 2;  // the database gives both directions
    l.name = fmt::format("NVLink {:g} GB/s per direction", gbs);
  } else if (g.pcie_gbs && *g.pcie_gbs > 0) {
    gbs = *g.pcie_gbs;
    l.name = fmt::format("PCIe {:g} GB/s per direction", gbs);
  } else {
    throw invalid_argument(fmt::format(
        "{} has no NVLink or PCIe bandwidth in the database: cannot time the collectives of a "
        "parallel job",
        g.name));
  }
  l.model.alpha = o.link_alpha_s.value_or(comm::cost_model{}.alpha_shm);
  l.model.beta = 1.0 / (gbs * 1e9);
  l.model.gamma = 3.0 / g.bandwidth_bytes_per_s();  // read two, write one, in device memory
  return l;
}

llm_comm collective_cost(std::string name, comm::collective coll, int ranks, double bytes,
                         double count, const link& l) {
  llm_comm x;
  x.name = std::move(name);
  x.ranks = ranks;
  x.bytes = bytes;
  x.count = count;
  comm::collective timed = coll;
  comm::algorithm algo = comm::algorithm::auto_select;
  if (coll == comm::collective::sendrecv) {
    timed = comm::collective::broadcast;  // two ranks, direct: one message of S bytes
    algo = comm::algorithm::direct;
  }
  const comm::collective_estimate e = comm::estimate_collective(timed, ranks, bytes, l.model, algo);
  x.seconds = e.seconds;
  x.collective = coll == comm::collective::sendrecv ? "send" : std::string(comm::to_string(coll));
  x.algorithm = std::string(comm::to_string(e.algo));
  return x;
}

// The collectives of one forward pass (inference) on `tokens` tokens per replica.
std::vector<llm_comm> forward_comms(const setup& s, double tokens, const link& l, bool logits) {
  const llm_config& c = *s.c;
  const double L = static_cast<double>(c.layers);
  const double act = tokens * static_cast<double>(c.hidden) * s.a;
  std::vector<llm_comm> out;
  const int tp = static_cast<int>(s.tp);
  if (tp > 1) {
    out.push_back(
        collective_cost("tp allreduce: embedding", comm::collective::allreduce, tp, act, 1, l));
    out.push_back(collective_cost("tp allreduce: attention output", comm::collective::allreduce, tp,
                                  act, L, l));
    out.push_back(
        collective_cost("tp allreduce: MLP output", comm::collective::allreduce, tp, act, L, l));
    if (logits)
      out.push_back(collective_cost("tp allgather: logits", comm::collective::allgather, tp,
                                    tokens * s.vocab * s.tp * s.a, 1, l));
  }
  if (s.pp > 1)
    out.push_back(collective_cost("pp send: activations to the next stage",
                                  comm::collective::sendrecv, 2, act, s.pp - 1, l));
  if (s.ep > 1) {
    const double routed =
        tokens * static_cast<double>(c.experts_per_token) * static_cast<double>(c.hidden) * s.a;
    out.push_back(collective_cost("ep alltoall: dispatch + combine", comm::collective::alltoall,
                                  static_cast<int>(s.ep), routed, 2 * L, l));
  }
  return out;
}

double comm_seconds(const std::vector<llm_comm>& v) {
  double t = 0;
  for (const llm_comm& x : v) t += x.count * x.seconds;
  return t;
}

}  // namespace

llm_report analyze_llm(const llm_config& c, const llm_options& o, const gpu_spec& device) {
  check_options(c, o);
  llm_report r;
  r.config = c;
  r.options = o;
  r.params = count_params(c);
  const setup s = make_setup(c, o, device);
  r.matmul_dtype = s.mm;
  r.weight_bytes_per_param = s.w;
  r.compute_note = s.note;
  const bool parallel = o.parallel.gpus() > 1 || o.parallel.ep > 1;
  const std::optional<link> l = parallel ? std::optional<link>(gpu_link(device, o)) : std::nullopt;
  const double replicas = s.tp * s.dp;  // GPUs doing distinct shares of one layer's work
  const double h = static_cast<double>(c.hidden);
  const double L = static_cast<double>(c.layers);
  r.kv_bytes_per_token = 2 * L * static_cast<double>(c.kv_heads * c.head_dim) * s.kvb;

  const bool generating = o.generate > 0;
  const llm_phase phase = generating || o.training ? llm_phase::prefill : o.phase;
  const pass first = forward(s, phase, o.seq);
  r.ops = first.ops;
  const double first_tokens = phase == llm_phase::prefill ? s.B * o.seq : s.B;
  if (l) r.comms = forward_comms(s, first_tokens, *l, !o.training);

  memory_need need;
  need.weights = weight_bytes_per_gpu(s);
  double context = o.seq;  // the largest context the KV cache holds
  if (o.training) {
    // Backward = 2 x forward per op, in FLOPs and bytes (dgrad + wgrad for every matmul: the
    // rule tests/perf checks against autograd); the optimizer touches every local parameter.
    llm_training t;
    t.tokens = o.batch * o.seq;
    t.forward_flops = first.flops * replicas;
    t.backward_flops = 2 * t.forward_flops;
    t.forward_bytes = first.bytes * replicas;
    t.backward_bytes = 2 * t.forward_bytes;
    t.forward_seconds = first.seconds;
    t.backward_seconds = 2 * first.seconds;
    const double params_gpu = need.weights / s.a;  // parameters this GPU updates
    const double mixed = s.a < 4 ? 4 : 0;          // fp32 master copy
    double state = 0, flops_per = 0;
    switch (o.optimizer) {
      case llm_optimizer::adam: state = 8, flops_per = 14; break;
      case llm_optimizer::sgd_momentum: state = 4, flops_per = 4; break;
      case llm_optimizer::sgd: state = 0, flops_per = 2; break;
    }
    // Reads the gradient, the state and the fp32 weights; writes the state, the fp32
    // weights and (mixed precision) the narrow copy the next forward reads.
    const double per_param = s.a + 2 * (state + 4) + (mixed > 0 ? s.a : 0);
    const op_cost opt{flops_per * params_gpu, per_param * params_gpu};
    const roofline_point pt = evaluate(opt, device.peak(dtype::f32, false).tflops * 1e12,
                                       device.bandwidth_for(opt.bytes));
    t.optimizer_flops = opt.flops * replicas * s.pp;
    t.optimizer_bytes = opt.bytes * replicas * s.pp;
    t.optimizer_seconds = pt.seconds;
    need.gradients = params_gpu * s.a;
    need.optimizer = params_gpu * (state + mixed);
    // Every op keeps its inputs for the backward pass (the layers of one stage).
    need.activations = first.saved * std::ceil(L / s.pp) / L;
    r.total_flops = t.forward_flops + t.backward_flops + t.optimizer_flops;
    r.matmul_flops = 3 * first.matmul_flops * replicas;
    r.total_bytes = t.forward_bytes + t.backward_bytes + t.optimizer_bytes;
    r.compute_seconds = t.forward_seconds + t.backward_seconds + t.optimizer_seconds;
    // The backward pass runs every forward collective again (the conjugate operators).
    for (llm_comm& x : r.comms) x.count *= 2;
    if (l && s.dp > 1)
      r.comms.push_back(collective_cost("dp allreduce: gradients", comm::collective::allreduce,
                                        static_cast<int>(s.dp), need.gradients, 1, *l));
    r.training = t;
  } else if (generating) {
    llm_generation g;
    g.prompt = o.seq;
    g.generated = o.generate;
    g.prefill_flops = first.flops * replicas;
    g.prefill_bytes = first.bytes * replicas;
    g.ttft_seconds = first.seconds + (l ? comm_seconds(r.comms) : 0);
    const auto steps = static_cast<std::int64_t>(std::ceil(o.generate));
    double decode_compute = 0, decode_comm = 0;
    std::vector<llm_comm> step_comms;
    if (l) step_comms = forward_comms(s, s.B, *l, true);
    for (std::int64_t j = 0; j < steps; ++j) {
      const pass step = forward(s, llm_phase::decode, o.seq + static_cast<double>(j));
      g.decode_flops += step.flops * replicas;
      g.decode_bytes += step.bytes * replicas;
      decode_compute += step.seconds;
      decode_comm += comm_seconds(step_comms);
    }
    g.decode_seconds = decode_compute + decode_comm;
    g.decode_tokens_per_s = o.batch * o.generate / g.decode_seconds;
    g.overall_tokens_per_s = o.batch * o.generate / (g.ttft_seconds + g.decode_seconds);
    for (llm_comm& x : step_comms) x.count *= static_cast<double>(steps), x.name += " (decode)";
    r.comms.insert(r.comms.end(), step_comms.begin(), step_comms.end());
    context = o.seq + o.generate;
    r.total_flops = g.prefill_flops + g.decode_flops;
    r.matmul_flops = first.matmul_flops * replicas;  // of the prefill
    r.total_bytes = g.prefill_bytes + g.decode_bytes;
    r.compute_seconds = first.seconds + decode_compute;
    need.activations = first.activation_peak + first_tokens * h * s.a;
    r.generation = g;
  } else {
    r.total_flops = first.flops * replicas;
    r.matmul_flops = first.matmul_flops * replicas;
    r.total_bytes = first.bytes * replicas;
    r.compute_seconds = first.seconds;
    // One layer's working set at a time, plus the residual stream it adds to.
    need.activations = first.activation_peak + first_tokens * h * s.a;
    if (o.phase == llm_phase::prefill) context = o.seq;
  }
  need.kv_cache = o.training ? 0 : kv_bytes_per_gpu(s, context);
  const double kept =
      c.sliding_window > 0 ? std::min(context, static_cast<double>(c.sliding_window)) : context;
  r.kv_cache_bytes = o.training ? 0 : o.batch * kept * r.kv_bytes_per_token;
  r.comm_seconds = comm_seconds(r.comms);
  r.memory = check_memory_fit(need, device, o.parallel.gpus());
  if (r.memory.fits) r.seconds = r.compute_seconds + r.comm_seconds;
  return r;
}

}  // namespace keel::perf
