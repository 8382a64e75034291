#!/usr/bin/env python3
"""Writes keel serve's demo model repository (Triton's layout: OUT/NAME/config.pbtxt and
OUT/NAME/1/model.pt) with RANDOM weights: nothing is downloaded, and every model is built
after torch.manual_seed(0), so two runs write the same files, byte for byte.

  resnet18    torchvision's ResNet-18 (weights=None), traced: INPUT__0 FP32 [3,224,224]
              -> OUTPUT__0 FP32 [1000]; dynamic batching.
  bert        a BERT-base-like encoder: hidden 768, 12 heads, FFN 3072 (GELU), vocab 30522,
              512 learned positions, post-LayerNorm, tanh pooler; input_ids and attention_mask
              INT64 [128] (a fixed sequence: the load generator turns -1 dims into 1, and a
              one-token BERT would measure nothing) -> pooled FP32 [768]. 2 layers, not 12: the
              vocabulary embedding alone is 94 MB, each layer adds 28 MB and ~1.9 GFLOP per
              sequence, and 2 layers keep a request near ResNet-18's cost on a small CPU and
              the repository near 250 MB.
  gpt2        a GPT-2-like decoder step: 4 pre-LayerNorm causal self-attention blocks, width
              256, 4 heads, 512 positions, GPT-2's vocabulary (50257) with the embedding tied
              to the LM head; input_ids INT64 [-1] (the context) -> logits FP32 [50257] of the
              next token. The full vocabulary is kept because the LM head is what dominates a
              decode step; the narrow width keeps the file at 65 MB.
  preprocess  IMAGE UINT8 [224,224,3] (HWC) -> PIXELS FP32 [3,224,224], ImageNet-normalized.
  topk        LOGITS FP32 [1000] -> SCORES FP32 [5] (softmax) and CLASSES INT64 [5].
  classify    an ensemble: IMAGE -> preprocess -> resnet18 -> topk -> SCORES, CLASSES.
  identity    INPUT0 FP32 [16] -> OUTPUT0 (a copy): for measuring the server's overhead.

Every model takes a batch dimension (max_batch_size > 0). Each TorchScript model has a
two-run warmup on zeros. --no-batching writes the same repository without dynamic_batching
blocks; --link-from REPO then symlinks the model files of an existing repository instead of
exporting them again (configs only). The script loads every model back, runs it on batches of
1 and 2 rows, checks the rows agree, checks the ensemble against an eager reference, and prints
each model's size and batch-1 latency.

Usage: /usr/bin/python3 scripts/make-serve-demo.py OUT [--no-batching] [--link-from REPO]
(Debian's python3-torch and python3-torchvision.)
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------- the models


class BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.act = nn.GELU()
        self.ffn_out = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, bias):  # x [B, T, H]; bias [B, 1, 1, T], additive
        b, t, h = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.heads, h // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(h // self.heads) + bias
        ctx = torch.matmul(att.softmax(-1), v).transpose(1, 2).reshape(b, t, h)
        x = self.norm1(x + self.proj(ctx))
        return self.norm2(x + self.ffn_out(self.act(self.ffn_in(x))))


class Bert(nn.Module):
    def __init__(self, layers=2, hidden=768, heads=12, ffn=3072, vocab=30522, positions=512):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)
        for m in self.modules():  # BERT's initialization
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask):  # [B, T] int64 each; mask: nonzero = attend
        t = input_ids.size(1)
        pos = torch.arange(t, device=input_ids.device)
        x = self.norm(self.words(input_ids) + self.positions(pos) + self.token_type.weight[0])
        bias = (attention_mask == 0).to(x.dtype).mul(-10000.0)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        return torch.tanh(self.pool(x[:, 0]))


class GptBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU(approximate="tanh")
        self.fc_proj = nn.Linear(4 * width, width)

    def forward(self, x, causal):  # causal [T, T] bool, True = may attend
        b, t, w = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, w // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(w // self.heads)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.proj(torch.matmul(att, v).transpose(1, 2).reshape(b, t, w))
        return x + self.fc_proj(self.act(self.fc(self.ln2(x))))


class Gpt2(nn.Module):
    def __init__(self, layers=4, width=256, heads=4, vocab=50257, positions=512):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.blocks = nn.ModuleList([GptBlock(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.register_buffer("causal", torch.ones(positions, positions, dtype=torch.bool).tril())
        for m in self.modules():  # GPT-2's initialization
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, input_ids):  # [B, T] int64 -> logits [B, vocab] of the token after T
        t = input_ids.size(1)
        x = self.wte(input_ids) + self.wpe(torch.arange(t, device=input_ids.device))
        causal = self.causal[:t, :t]
        for block in self.blocks:
            x = block(x, causal)
        return F.linear(self.ln_f(x[:, -1]), self.wte.weight)  # the LM head is tied to wte


class Preprocess(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255)
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255)

    def forward(self, IMAGE):  # [B, H, W, 3] uint8 -> [B, 3, H, W] float32
        return ((IMAGE.permute(0, 3, 1, 2).float() - self.mean) / self.std).contiguous()


class TopK(nn.Module):
    def forward(self, LOGITS):  # [B, 1000] -> the 5 best classes and their probabilities
        scores, classes = LOGITS.softmax(-1).topk(5, dim=-1)
        return {"SCORES": scores, "CLASSES": classes}


class Identity(nn.Module):
    def forward(self, INPUT0):
        return INPUT0.clone()


def resnet18():
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    with torch.no_grad():
        return torch.jit.trace(model, torch.rand(1, 3, 224, 224)), model


# ---------------------------------------------------------------- the repository
# name -> (max_batch_size, inputs, outputs, dynamic_batching (preferred sizes, delay in us) or None)
# where inputs/outputs are [(name, TYPE, dims)].
FP32, INT64, UINT8 = "TYPE_FP32", "TYPE_INT64", "TYPE_UINT8"
MODELS = {
    "resnet18": (16, [("INPUT__0", FP32, [3, 224, 224])], [("OUTPUT__0", FP32, [1000])], ([8, 16], 2000)),
    "bert": (8, [("input_ids", INT64, [128]), ("attention_mask", INT64, [128])],
             [("pooled", FP32, [768])], ([4, 8], 2000)),
    "gpt2": (16, [("input_ids", INT64, [-1])], [("logits", FP32, [50257])], ([8, 16], 1000)),
    "preprocess": (16, [("IMAGE", UINT8, [224, 224, 3])], [("PIXELS", FP32, [3, 224, 224])], None),
    "topk": (16, [("LOGITS", FP32, [1000])], [("SCORES", FP32, [5]), ("CLASSES", INT64, [5])], None),
    "identity": (8, [("INPUT0", FP32, [16])], [("OUTPUT0", FP32, [16])], None),
}
# The ensemble: (step model, {its input: ensemble tensor}, {its output: ensemble tensor}).
CLASSIFY = [
    ("preprocess", {"IMAGE": "IMAGE"}, {"PIXELS": "pixels"}),
    ("resnet18", {"INPUT__0": "pixels"}, {"OUTPUT__0": "logits"}),
    ("topk", {"LOGITS": "logits"}, {"SCORES": "SCORES", "CLASSES": "CLASSES"}),
]
WARMUP_VARIABLE_EXTENT = 8  # what a -1 dim is in the warmup sample
QUEUE_LIMIT = 32  # requests queued per batching model; beyond, 503 at once (overload)


def dims(d):
    return "[ " + ", ".join(map(str, d)) + " ]"


def tensors(kind, specs):
    rows = [f'  {{ name: "{n}", data_type: {t}, dims: {dims(d)} }}' for n, t, d in specs]
    return f"{kind} [\n" + ",\n".join(rows) + "\n]\n"


def config_text(name, batching):
    max_batch, inputs, outputs, dyn = MODELS[name]
    text = (f"# keel serve demo model (random weights), written by scripts/make-serve-demo.py\n"
            f'name: "{name}"\nplatform: "pytorch_libtorch"\nmax_batch_size: {max_batch}\n'
            + tensors("input", inputs) + tensors("output", outputs)
            + "instance_group [ { count: 1, kind: KIND_CPU } ]\n")
    if batching and dyn:
        text += (f"dynamic_batching {{\n  preferred_batch_size: {dims(dyn[0])}\n"
                 f"  max_queue_delay_microseconds: {dyn[1]}\n"
                 f"  default_queue_policy {{ max_queue_size: {QUEUE_LIMIT} }}\n}}\n")
    samples = "\n".join(
        f'    inputs {{ key: "{n}" value {{ data_type: {t}, '
        f"dims: {dims([WARMUP_VARIABLE_EXTENT if x < 0 else x for x in d])}, zero_data: true }} }}"
        for n, t, d in inputs)
    return text + f'model_warmup [\n  {{\n    name: "zeros"\n    batch_size: 1\n    count: 2\n{samples}\n  }}\n]\n'


def ensemble_text():
    first, last = MODELS[CLASSIFY[0][0]], MODELS[CLASSIFY[-1][0]]
    steps = []
    for model, ins, outs in CLASSIFY:
        maps = [f'      input_map {{ key: "{k}" value: "{v}" }}' for k, v in ins.items()]
        maps += [f'      output_map {{ key: "{k}" value: "{v}" }}' for k, v in outs.items()]
        steps.append(f'    {{\n      model_name: "{model}"\n      model_version: -1\n' + "\n".join(maps) + "\n    }")
    return (f"# keel serve demo ensemble, written by scripts/make-serve-demo.py\n"
            f'name: "classify"\nplatform: "ensemble"\n'
            f"max_batch_size: {min(MODELS[m][0] for m, _, _ in CLASSIFY)}\n"
            + tensors("input", first[1]) + tensors("output", last[2])
            + "ensemble_scheduling {\n  step [\n" + ",\n".join(steps) + "\n  ]\n}\n")


# ---------------------------------------------------------------- checks

TORCH_TYPES = {FP32: torch.float32, INT64: torch.int64, UINT8: torch.uint8}


def sample(specs, batch, gen, extent=7):
    out = []
    for _, t, d in specs:
        shape = [batch] + [extent if x < 0 else x for x in d]
        if t == FP32:
            out.append(torch.randn(shape, generator=gen))
        elif t == UINT8:
            out.append(torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8))
        else:
            out.append(torch.randint(0, 100, shape, generator=gen, dtype=torch.int64))
    return out


def as_outputs(result, specs):
    if isinstance(result, dict):
        return [result[n] for n, _, _ in specs]
    return list(result) if isinstance(result, (tuple, list)) else [result]


def check(name, module, gen):
    _, inputs, outputs, _ = MODELS[name]
    x2 = sample(inputs, 2, gen)
    with torch.inference_mode():
        y2 = as_outputs(module(*x2), outputs)
        y1 = as_outputs(module(*[x[:1] for x in x2]), outputs)
        module(*[x[:1] for x in x2])
        times = []
        for _ in range(3):
            start = time.perf_counter()
            module(*[x[:1] for x in x2])
            times.append(time.perf_counter() - start)
    for (oname, t, d), a, b in zip(outputs, y1, y2):
        for batch, y in ((1, a), (2, b)):
            want = [batch] + [7 if x < 0 else x for x in d]
            if list(y.shape) != want or y.dtype != TORCH_TYPES[t]:
                sys.exit(f"{name}: output {oname} is {y.dtype} {list(y.shape)}, want {t} {want}")
        if not torch.allclose(a.double(), b[:1].double(), rtol=1e-4, atol=1e-4):
            sys.exit(f"{name}: output {oname} of row 0 differs between batches of 1 and 2")
    return sorted(times)[1]


def check_ensemble(loaded, eager_resnet, gen):
    image = torch.randint(0, 256, (2, 224, 224, 3), generator=gen, dtype=torch.uint8)
    values = {"IMAGE": image}
    with torch.inference_mode():
        for model, ins, outs in CLASSIFY:  # as the ensemble scheduler maps tensors
            _, inputs, outputs, _ = MODELS[model]
            result = as_outputs(loaded[model](*[values[ins[n]] for n, _, _ in inputs]), outputs)
            values.update({outs[n]: r for (n, _, _), r in zip(outputs, result)})
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        pixels = (image.permute(0, 3, 1, 2).float() / 255 - mean) / std
        scores, classes = eager_resnet(pixels).softmax(-1).topk(5, dim=-1)
    if not torch.equal(values["CLASSES"], classes) or not torch.allclose(values["SCORES"], scores, atol=1e-5):
        sys.exit("classify: the ensemble's composition differs from the eager reference")


# ---------------------------------------------------------------- main


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":  # TorchScript's code files list constants in set order
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--no-batching", action="store_true", help="omit every dynamic_batching block")
    ap.add_argument("--link-from", metavar="REPO", help="symlink REPO's model files; export nothing")
    args = ap.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    for name in MODELS:
        os.makedirs(os.path.join(args.out, name, "1"), exist_ok=True)
        with open(os.path.join(args.out, name, "config.pbtxt"), "w") as f:
            f.write(config_text(name, not args.no_batching))
    os.makedirs(os.path.join(args.out, "classify", "1"), exist_ok=True)
    with open(os.path.join(args.out, "classify", "config.pbtxt"), "w") as f:
        f.write(ensemble_text())
    if args.link_from:
        for name in MODELS:
            target = os.path.abspath(os.path.join(args.link_from, name, "1", "model.pt"))
            if not os.path.isfile(target):
                sys.exit(f"{target}: no such model file")
            link = os.path.join(args.out, name, "1", "model.pt")
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(target, link)
        print(f"wrote the configurations of {args.out}, models linked from {args.link_from}")
        return

    builders = {"bert": Bert, "gpt2": Gpt2, "preprocess": Preprocess, "topk": TopK, "identity": Identity}
    eager_resnet = None
    for name in MODELS:
        torch.manual_seed(0)
        if name == "resnet18":
            module, eager_resnet = resnet18()
        else:
            module = torch.jit.script(builders[name]().eval())
        module.save(os.path.join(args.out, name, "1", "model.pt"))
    gen = torch.Generator().manual_seed(1)
    loaded = {n: torch.jit.load(os.path.join(args.out, n, "1", "model.pt")).eval() for n in MODELS}
    print(f"{'model':<11} {'MB':>6} {'params':>8} {'batch-1 ms':>10}")
    for name, module in loaded.items():
        ms = check(name, module, gen) * 1e3
        size = os.path.getsize(os.path.join(args.out, name, "1", "model.pt")) / 1e6
        params = sum(p.numel() for p in module.parameters()) / 1e6
        print(f"{name:<11} {size:6.1f} {params:7.2f}M {ms:10.2f}")
    check_ensemble(loaded, eager_resnet, gen)
    print(f"classify    ensemble of {' -> '.join(m for m, _, _ in CLASSIFY)}: matches the eager reference")
    print(f"wrote {args.out} ({'without' if args.no_batching else 'with'} dynamic batching)")


if __name__ == "__main__":
    main()
