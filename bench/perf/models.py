"""Real models with random weights, built from their configs (nothing is downloaded), and
their ONNX export. Used by tests/perf (ResNet-50 MAC count) and by validate_cpu.py.

Run with Debian's interpreter: /usr/bin/python3 bench/perf/models.py NAME OUT.onnx
"""
import math
import sys

import torch
import torch.nn as nn
import torchvision


class Encoder(nn.Module):
    """BERT-base-like encoder: token + position embeddings, post-LN blocks with GELU MLPs."""

    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, inner=3072, positions=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(positions, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, inner, causal=False, pre_ln=False)
                                    for _ in range(layers))

    def forward(self, ids):
        x = self.ln(self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0)))
        for block in self.blocks:
            x = block(x)
        return x


class Decoder(nn.Module):
    """GPT-2-like decoder (config of gpt2: 12 layers, 768 hidden, 12 heads, tied LM head)."""

    def __init__(self, vocab=50257, hidden=768, layers=12, heads=12, positions=1024):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, 4 * hidden, causal=True, pre_ln=True)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.tok.weight.t()


class Block(nn.Module):
    def __init__(self, hidden, heads, inner, causal, pre_ln):
        super().__init__()
        self.heads, self.causal, self.pre_ln = heads, causal, pre_ln
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.fc1 = nn.Linear(hidden, inner)
        self.fc2 = nn.Linear(inner, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.ln2 = nn.LayerNorm(hidden)

    def attention(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.reshape(b, s, self.heads, d).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(2, 3) / math.sqrt(d)
        if self.causal:
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, s, h))

    def mlp(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attention(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attention(x))
        return self.ln2(x + self.mlp(x))


def build(name):
    """Returns (model in eval mode, example input)."""
    torch.manual_seed(0)
    if name in ("resnet18", "resnet50", "mobilenet_v3_large"):
        model = getattr(torchvision.models, name)(weights=None)
        example = torch.randn(1, 3, 224, 224)
    elif name == "bert_base":
        model, example = Encoder(), torch.randint(0, 30522, (1, 128))
    elif name == "gpt2":
        model, example = Decoder(), torch.randint(0, 50257, (1, 128))
    else:
        raise SystemExit(f"unknown model {name}")
    return model.eval(), example


def export(name, path):
    model, example = build(name)
    with torch.no_grad():
        torch.onnx.export(model, example, path, opset_version=14, do_constant_folding=True,
                          input_names=["input"], output_names=["output"])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: models.py NAME OUT.onnx")
    export(sys.argv[1], sys.argv[2])
