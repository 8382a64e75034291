"""Counts the matmul FLOPs of a forward and a backward pass of a tiny Llama-style decoder with
PyTorch's autograd and profiler (torch.profiler, with_flops: aten::mm, addmm, bmm), and writes
them next to the model's config.json, as the reference for keel's training rule (backward =
2 x forward: every matmul has a data-gradient and a weight-gradient product).

    /usr/bin/python3 tests/data/perf/llm_autograd.py

writes tests/data/perf/tiny-llama.json (the config keel reads) and
tests/data/perf/tiny-llama.autograd.json (the counts). The model follows the Hugging Face
Llama modeling code: RMSNorm, q/k/v/o projections with grouped K/V heads, softmax(QK^T/sqrt(d))V
over the full square, SwiGLU MLP, untied LM head applied to every position.
"""
import json
import os

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}
BATCH, SEQ = 2, 16


class RMSNorm(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(h))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.H, self.kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.d = h // self.H
        i = c["intermediate_size"]
        lin = lambda a, b: torch.nn.Linear(a, b, bias=False)
        self.attn_norm, self.mlp_norm = RMSNorm(h), RMSNorm(h)
        self.q, self.k, self.v, self.o = lin(h, self.H * self.d), lin(h, self.kv * self.d), \
            lin(h, self.kv * self.d), lin(self.H * self.d, h)
        self.gate, self.up, self.down = lin(h, i), lin(h, i), lin(i, h)

    def forward(self, x):
        B, S, _ = x.shape
        y = self.attn_norm(x)
        q = self.q(y).view(B, S, self.H, self.d).transpose(1, 2).reshape(B * self.H, S, self.d)
        rep = self.H // self.kv
        k = self.k(y).view(B, S, self.kv, 1, self.d).expand(B, S, self.kv, rep, self.d)
        v = self.v(y).view(B, S, self.kv, 1, self.d).expand(B, S, self.kv, rep, self.d)
        k = k.reshape(B, S, self.H, self.d).transpose(1, 2).reshape(B * self.H, S, self.d)
        v = v.reshape(B, S, self.H, self.d).transpose(1, 2).reshape(B * self.H, S, self.d)
        mask = torch.full((S, S), float("-inf")).triu(1)
        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / self.d ** 0.5 + mask, dim=-1)
        a = torch.bmm(p, v).view(B, self.H, S, self.d).transpose(1, 2).reshape(B, S, -1)
        x = x + self.o(a)
        y = self.mlp_norm(x)
        return x + self.down(torch.nn.functional.silu(self.gate(y)) * self.up(y))


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"])
        self.head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def matmul_flops(prof):
    return sum(e.flops for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm", "aten::bmm"))


def main():
    torch.manual_seed(0)
    model = Model(CONFIG)
    ids = torch.randint(0, CONFIG["vocab_size"], (BATCH, SEQ))
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as fwd:
        logits = model(ids)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, CONFIG["vocab_size"]), ids.view(-1))
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as bwd:
        loss.backward()
    params = sum(p.numel() for p in model.parameters())
    with open(os.path.join(HERE, "tiny-llama.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    with open(os.path.join(HERE, "tiny-llama.autograd.json"), "w") as f:
        json.dump({"source": "tests/data/perf/llm_autograd.py (torch " + torch.__version__ +
                   " autograd, torch.profiler with_flops: aten::mm, addmm, bmm)",
                   "batch": BATCH, "seq": SEQ, "params": params,
                   "forward_matmul_flops": matmul_flops(fwd),
                   "backward_matmul_flops": matmul_flops(bwd)}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
