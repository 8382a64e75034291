#include "keel/perf/llm.hpp"

#include "embedded_data.hpp"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/json_value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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

llm_params count_params(const llm_config& c) {
  const double h = static_cast<double>(c.hidden);
  const double q = static_cast<double>(c.heads * c.head_dim);
  const double kv = static_cast<double>(c.kv_heads * c.head_dim);
  const double i = static_cast<double>(c.intermediate);
  const double norm = c.layer_norm ? 2 * h : h;
  double attn = h * q + 2 * h * kv + q * h;
  if (c.qkv_bias || c.linear_bias) attn += q + 2 * kv;
  if (c.linear_bias) attn += h;
  double expert = c.gated_mlp ? 3 * h * i : 2 * h * i;
  if (c.linear_bias) expert += i + h;
  const double experts_total = c.experts ? expert * c.experts + h * c.experts : expert;
  const double experts_active = c.experts ? expert * c.experts_per_token + h * c.experts : expert;
  llm_params p;
  p.embedding = static_cast<double>(c.vocab) * h + (c.learned_positions ? c.max_positions * h : 0);
  const double head = c.tied_embeddings ? 0 : static_cast<double>(c.vocab) * h;
  const double layers = static_cast<double>(c.layers);
  p.total = p.embedding + head + norm + layers * (attn + experts_total + 2 * norm);
  p.active = p.embedding + head + norm + layers * (attn + experts_active + 2 * norm);
  return p;
}

llm_report analyze_llm(const llm_config& c, const llm_options& o, const gpu_spec& device) {
  if (!(o.batch > 0) || !(o.seq > 0)) throw invalid_argument("batch and seq must be positive");
  llm_report r;
  r.config = c;
  r.options = o;
  r.params = count_params(c);
  const bool prefill = o.phase == llm_phase::prefill;
  const double a = bytes_of(o.weights);  // activations share the weight type
  const double w = bytes_of(o.weights);
  const double kvb = bytes_of(o.kv.value_or(o.weights));
  const double B = o.batch;
  const double s = o.seq;
  const double T = prefill ? B * s : B;  // tokens processed in this pass
  const double h = static_cast<double>(c.hidden);
  const double H = static_cast<double>(c.heads);
  const double nkv = static_cast<double>(c.kv_heads);
  const double d = static_cast<double>(c.head_dim);
  const double i = static_cast<double>(c.intermediate);
  const double L = static_cast<double>(c.layers);
  const bool bias = c.linear_bias;

  auto add = [&](std::string name, double count, op_cost cost, bool matmul) {
    r.ops.push_back({std::move(name), count, cost, matmul, {}, {}});
  };
  // A linear ic->oc over `tokens` tokens; `out_bytes` per output element.
  auto linear = [&](std::string name, double count, double ic, double oc, double tokens,
                    bool has_bias, double out_bytes, double weight_sets = 1) {
    op_cost cost{2 * ic * oc * tokens + (has_bias ? oc * tokens : 0),
                 weight_sets * (ic * oc + (has_bias ? oc : 0)) * w + tokens * ic * a +
                     tokens * oc * out_bytes};
    add(std::move(name), count, cost, true);
  };
  auto norm = [&](std::string name, double count) {
    add(std::move(name), count, {7 * T * h, 2 * T * h * a + (c.layer_norm ? 2 : 1) * h * w}, false);
  };

  // Embedding lookup (and gpt2's position add).
  add("embedding", 1,
      {c.learned_positions ? T * h : 0, T * h * w * (c.learned_positions ? 2 : 1) + T * h * a},
      false);

  norm("attn_norm", L);
  linear("q_proj", L, h, H * d, T, bias || c.qkv_bias, a);
  linear("k_proj", L, h, nkv * d, T, bias || c.qkv_bias, kvb);  // written to the KV cache
  linear("v_proj", L, h, nkv * d, T, bias || c.qkv_bias, kvb);
  const double kv_len = s;                // keys each query attends to
  const double q_rows = prefill ? s : 1;  // queries per sequence
  const double scores = B * H * q_rows * kv_len;
  const double q_bytes = B * q_rows * H * d * a;
  const double k_bytes = B * kv_len * nkv * d * kvb;
  if (o.flash) {
    add("attention (fused)", L, {4 * scores * d + 5 * scores, 2 * q_bytes + 2 * k_bytes}, true);
  } else {
    add("qk_matmul", L, {2 * scores * d, q_bytes + k_bytes + scores * a}, true);
    add("softmax", L, {5 * scores, 2 * scores * a}, false);
    add("sv_matmul", L, {2 * scores * d, scores * a + k_bytes + q_bytes}, true);
  }
  linear("o_proj", L, H * d, h, T, bias, a);
  add("attn_residual", L, {T * h, 3 * T * h * a}, false);
  norm("mlp_norm", L);
  if (c.experts) {
    const double E = static_cast<double>(c.experts);
    const double k = static_cast<double>(c.experts_per_token);
    const double routed = T * k;                 // token-expert pairs
    const double touched = std::min(E, routed);  // experts whose weights are read
    linear("router", L, h, E, T, false, a);
    linear("expert_gate_proj", L, h, i, routed, false, a, touched);
    linear("expert_up_proj", L, h, i, routed, false, a, touched);
    add("expert_act_mul", L, {3 * routed * i, 3 * routed * i * a}, false);
    linear("expert_down_proj", L, i, h, routed, false, a, touched);
    add("expert_combine", L, {2 * routed * h, routed * h * a + T * h * a}, false);
  } else if (c.gated_mlp) {
    linear("gate_proj", L, h, i, T, bias, a);
    linear("up_proj", L, h, i, T, bias, a);
    add("act_mul", L, {3 * T * i, 3 * T * i * a}, false);
    linear("down_proj", L, i, h, T, bias, a);
  } else {
    linear("fc_in", L, h, i, T, bias, a);
    add("activation", L, {2 * T * i, 2 * T * i * a}, false);
    linear("fc_out", L, i, h, T, bias, a);
  }
  add("mlp_residual", L, {T * h, 3 * T * h * a}, false);
  norm("final_norm", 1);
  linear("lm_head", 1, h, static_cast<double>(c.vocab), T, false, a);

  const peak_rate matmul_peak = device.peak(o.weights, o.tensor);
  const peak_rate vector_peak = device.peak(o.weights, false);
  for (llm_op& op : r.ops) {
    const peak_rate& p = op.matmul ? matmul_peak : vector_peak;
    op.peak_key = p.key;
    op.point = evaluate(op.cost, p.tflops * 1e12, device.bandwidth_for(op.cost.bytes));
    r.total_flops += op.count * op.cost.flops;
    if (op.matmul) r.matmul_flops += op.count * op.cost.flops;
    r.total_bytes += op.count * op.cost.bytes;
    r.seconds += op.count * op.point.seconds;
  }
  if (o.flash) r.matmul_flops -= L * 5 * scores;  // the fused op's softmax share
  r.kv_bytes_per_token = 2 * L * nkv * d * kvb;
  return r;
}

}  // namespace keel::perf
