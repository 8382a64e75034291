#include "keel/memory/synth.hpp"

#include <fmt/format.h>

#include <random>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

constexpr std::uint64_t k_bf16 = 2;
constexpr std::uint64_t k_fp32 = 4;

// Issues allocations through PyTorch's policy and remembers which tensor each one was.
class program {
 public:
  explicit program(std::string file)
      : file_(std::move(file)), allocator_(device_, allocator_config{}) {
    allocator_.record_history(true, std::size_t{1} << 24);
  }

  std::uint64_t alloc(std::uint64_t bytes, const std::string& name) {
    names_.push_back(name);
    return allocator_.allocate(bytes);
  }
  void free(std::uint64_t& address) {
    allocator_.deallocate(address);
    address = 0;
  }

  snapshot finish() {
    snapshot s = allocator_.take_snapshot();
    // A deterministic clock, and a frame naming the tensor on every alloc.
    std::size_t next_name = 0;
    std::int64_t line = 1;
    for (std::size_t i = 0; i < s.device_traces[0].size(); ++i) {
      trace_entry& e = s.device_traces[0][i];
      e.time_us = static_cast<std::int64_t>(i) * 10;
      if (e.action == trace_action::alloc && next_name < names_.size()) {
        e.frames = frame_stack({frame{file_, line++, names_[next_name++]}});
      }
    }
    return s;
  }

 private:
  std::string file_;
  sim_backend device_;
  caching_allocator allocator_;
  std::vector<std::string> names_;
};

void check(const synth_options& o) {
  if (o.steps <= 0 || o.layers <= 0 || o.hidden <= 0 || o.heads <= 0 || o.batch <= 0 ||
      o.vocab <= 0 || o.min_seq <= 0 || o.new_tokens <= 0) {
    throw invalid_argument(
        "synth: steps, layers, hidden, heads, batch, vocab, sequence lengths "
        "and new tokens must be positive");
  }
  if (o.min_seq > o.max_seq) {
    throw invalid_argument(
        fmt::format("synth: min_seq {} is larger than max_seq {}", o.min_seq, o.max_seq));
  }
  if (o.hidden % o.heads != 0) {
    throw invalid_argument(
        fmt::format("synth: hidden {} is not a multiple of heads {}", o.hidden, o.heads));
  }
}

snapshot train(const synth_options& o) {
  program p("keel-synth/train.py");
  std::mt19937_64 rng(o.seed);
  const std::uint64_t h = static_cast<std::uint64_t>(o.hidden);
  const std::uint64_t b = static_cast<std::uint64_t>(o.batch);
  const std::uint64_t heads = static_cast<std::uint64_t>(o.heads);
  const std::uint64_t vocab = static_cast<std::uint64_t>(o.vocab);

  // Parameters (fp32 master weights), per layer: qkv, out projection, two MLP matrices, norms.
  struct param {
    std::string name;
    std::uint64_t bytes;
    std::uint64_t weight = 0, grad = 0, exp_avg = 0, exp_avg_sq = 0;
  };
  std::vector<param> params;
  params.push_back({"embed.weight", vocab * h * k_fp32});
  for (int l = 0; l < o.layers; ++l) {
    const std::string n = fmt::format("layers.{}.", l);
    params.push_back({n + "ln1.weight", h * k_fp32});
    params.push_back({n + "attn.qkv.weight", 3 * h * h * k_fp32});
    params.push_back({n + "attn.proj.weight", h * h * k_fp32});
    params.push_back({n + "ln2.weight", h * k_fp32});
    params.push_back({n + "mlp.fc1.weight", 4 * h * h * k_fp32});
    params.push_back({n + "mlp.fc2.weight", 4 * h * h * k_fp32});
  }
  params.push_back({"ln_f.weight", h * k_fp32});
  for (param& w : params) w.weight = p.alloc(w.bytes, w.name);

  std::uniform_int_distribution<int> seq_len(o.min_seq, o.max_seq);
  for (int step = 0; step < o.steps; ++step) {
    const std::uint64_t s = static_cast<std::uint64_t>(seq_len(rng));
    const std::uint64_t act = b * s * h * k_bf16;  // one bf16 activation [B, S, h]
    std::uint64_t tokens = p.alloc(b * s * 8, "input_ids");
    std::uint64_t x = p.alloc(act, "embed.out");
    struct saved {
      std::uint64_t ln1, qkv, probs, attn, ln2, fc1, gelu;
    };
    std::vector<saved> layers;
    for (int l = 0; l < o.layers; ++l) {
      const std::string n = fmt::format("layers.{}.", l);
      saved a{};
      a.ln1 = p.alloc(act, n + "ln1.out");
      a.qkv = p.alloc(3 * act, n + "attn.qkv.out");
      std::uint64_t scores = p.alloc(b * heads * s * s * k_bf16, n + "attn.scores");
      a.probs = p.alloc(b * heads * s * s * k_bf16, n + "attn.softmax");
      p.free(scores);
      a.attn = p.alloc(act, n + "attn.out");
      std::uint64_t proj = p.alloc(act, n + "attn.proj.out");
      std::uint64_t residual = p.alloc(act, n + "residual1");
      p.free(proj);
      a.ln2 = p.alloc(act, n + "ln2.out");
      a.fc1 = p.alloc(4 * act, n + "mlp.fc1.out");
      a.gelu = p.alloc(4 * act, n + "mlp.gelu.out");
      std::uint64_t fc2 = p.alloc(act, n + "mlp.fc2.out");
      std::uint64_t out = p.alloc(act, n + "residual2");
      p.free(fc2);
      p.free(residual);
      p.free(x);
      x = out;
      layers.push_back(a);
    }
    std::uint64_t logits = p.alloc(b * s * vocab * k_fp32, "lm_head.logits");
    std::uint64_t loss = p.alloc(512, "loss");
    // Backward: logits grad, then layers in reverse.
    std::uint64_t dlogits = p.alloc(b * s * vocab * k_fp32, "lm_head.logits.grad");
    p.free(logits);
    std::uint64_t dx = p.alloc(act, "ln_f.out.grad");
    p.free(dlogits);
    for (int l = o.layers - 1; l >= 0; --l) {
      const std::string n = fmt::format("layers.{}.", l);
      saved& a = layers[static_cast<std::size_t>(l)];
      std::uint64_t dgelu = p.alloc(4 * act, n + "mlp.gelu.grad");
      p.free(a.gelu);
      std::uint64_t dfc1 = p.alloc(4 * act, n + "mlp.fc1.grad");
      p.free(a.fc1);
      p.free(dgelu);
      std::uint64_t dln2 = p.alloc(act, n + "ln2.grad");
      p.free(dfc1);
      p.free(a.ln2);
      std::uint64_t dattn = p.alloc(act, n + "attn.out.grad");
      p.free(dln2);
      std::uint64_t dprobs = p.alloc(b * heads * s * s * k_bf16, n + "attn.softmax.grad");
      p.free(a.attn);
      std::uint64_t dscores = p.alloc(b * heads * s * s * k_bf16, n + "attn.scores.grad");
      p.free(dprobs);
      p.free(a.probs);
      std::uint64_t dqkv = p.alloc(3 * act, n + "attn.qkv.grad");
      p.free(dscores);
      p.free(a.qkv);
      p.free(dattn);
      std::uint64_t dln1 = p.alloc(act, n + "ln1.grad");
      p.free(dqkv);
      p.free(a.ln1);
      p.free(dx);
      dx = dln1;
      // Weight gradients of this layer (allocated anew each step: set_to_none=True).
      for (param& w : params) {
        if (w.name.rfind(n, 0) == 0 && w.grad == 0) w.grad = p.alloc(w.bytes, w.name + ".grad");
      }
    }
    params.front().grad = p.alloc(params.front().bytes, "embed.weight.grad");
    params.back().grad = p.alloc(params.back().bytes, "ln_f.weight.grad");
    p.free(dx);
    p.free(loss);
    p.free(tokens);
    p.free(x);
    // optimizer.step(): Adam state on the first step, a temporary per parameter.
    for (param& w : params) {
      if (w.exp_avg == 0) {
        w.exp_avg = p.alloc(w.bytes, w.name + ".exp_avg");
        w.exp_avg_sq = p.alloc(w.bytes, w.name + ".exp_avg_sq");
      }
      std::uint64_t update = p.alloc(w.bytes, w.name + ".adam_update");
      p.free(update);
    }
    // optimizer.zero_grad(set_to_none=True)
    for (param& w : params) p.free(w.grad);
  }
  return p.finish();
}

snapshot infer(const synth_options& o) {
  program p("keel-synth/serve.py");
  std::mt19937_64 rng(o.seed);
  const std::uint64_t h = static_cast<std::uint64_t>(o.hidden);
  const std::uint64_t b = static_cast<std::uint64_t>(o.batch);
  const std::uint64_t heads = static_cast<std::uint64_t>(o.heads);
  const std::uint64_t vocab = static_cast<std::uint64_t>(o.vocab);
  // bf16 weights: embedding, per layer qkv/proj/mlp.
  std::vector<std::uint64_t> weights;
  weights.push_back(p.alloc(vocab * h * k_bf16, "embed.weight"));
  for (int l = 0; l < o.layers; ++l) {
    weights.push_back(p.alloc(3 * h * h * k_bf16, fmt::format("layers.{}.attn.qkv.weight", l)));
    weights.push_back(p.alloc(h * h * k_bf16, fmt::format("layers.{}.attn.proj.weight", l)));
    weights.push_back(p.alloc(8 * h * h * k_bf16, fmt::format("layers.{}.mlp.weight", l)));
  }
  std::uniform_int_distribution<int> prompt_len(o.min_seq, o.max_seq);
  for (int request = 0; request < o.steps; ++request) {
    const auto prompt = static_cast<std::uint64_t>(prompt_len(rng));
    std::vector<std::uint64_t> k_cache(static_cast<std::size_t>(o.layers));
    std::vector<std::uint64_t> v_cache(static_cast<std::size_t>(o.layers));
    for (std::uint64_t t = 0; t <= static_cast<std::uint64_t>(o.new_tokens); ++t) {
      const bool prefill = t == 0;
      const std::uint64_t q_len = prefill ? prompt : 1;
      const std::uint64_t kv_len = prompt + t;
      const std::uint64_t act = b * q_len * h * k_bf16;
      std::uint64_t x = p.alloc(act, prefill ? "prefill.embed" : "decode.embed");
      for (int l = 0; l < o.layers; ++l) {
        const std::string n = fmt::format("layers.{}.", l);
        auto& k = k_cache[static_cast<std::size_t>(l)];
        auto& v = v_cache[static_cast<std::size_t>(l)];
        std::uint64_t qkv = p.alloc(3 * act, n + "attn.qkv");
        // torch.cat((past, new)): a new tensor of the grown length, then the old one goes.
        std::uint64_t new_k = p.alloc(b * kv_len * h * k_bf16, n + "kv_cache.k");
        if (k != 0) p.free(k);
        k = new_k;
        std::uint64_t new_v = p.alloc(b * kv_len * h * k_bf16, n + "kv_cache.v");
        if (v != 0) p.free(v);
        v = new_v;
        std::uint64_t scores = p.alloc(b * heads * q_len * kv_len * k_bf16, n + "attn.scores");
        std::uint64_t attn = p.alloc(act, n + "attn.out");
        p.free(scores);
        p.free(qkv);
        std::uint64_t mlp = p.alloc(4 * act, n + "mlp.hidden");
        std::uint64_t out = p.alloc(act, n + "residual");
        p.free(mlp);
        p.free(attn);
        p.free(x);
        x = out;
      }
      std::uint64_t logits = p.alloc(b * vocab * k_fp32, "lm_head.logits");
      std::uint64_t next = p.alloc(b * 8, "next_token");
      p.free(logits);
      p.free(next);
      p.free(x);
    }
    for (auto& k : k_cache) p.free(k);
    for (auto& v : v_cache) p.free(v);
  }
  return p.finish();
}

}  // namespace

snapshot synthesize(const synth_options& options) {
  check(options);
  return options.kind == synth_kind::train ? train(options) : infer(options);
}

}  // namespace keel::memory
