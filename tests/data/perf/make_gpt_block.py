"""Regenerates gpt-block.onnx and gpt-block.golden.json, the dynamic-shape graph that
tests/perf/onnx_model_test.cpp and perf_cli_test.cpp count.

    /usr/bin/python3 tests/data/perf/make_gpt_block.py tests/data/perf

One GPT-2-small decoder block (d_model 768, 12 heads, FFN 3072, pre-LayerNorm, causal mask,
GELU) exported by torch.onnx.export with dynamic_axes {0: "batch", 1: "sequence"}, as every
Hugging Face export is; the initializers keep their names, types and dims but lose their data
(counting needs only shapes). The golden file holds the MACs from the closed form, independent
of keel: per token 4 d^2 (QKV and output projections) + 2 d f (FFN), plus 2 B S^2 d for the two
attention products.
"""
import json
import math
import os
import sys
import tempfile

import onnx
import torch
import torch.nn as nn

D, HEADS, FFN, MAX_SEQ = 768, 12, 3072, 1024


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, FFN)
        self.out = nn.Linear(FFN, D)
        self.register_buffer("mask", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ)).view(1, 1, MAX_SEQ, MAX_SEQ))

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q = q.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // HEADS))
        att = att.masked_fill(self.mask[:, :, :s, :s] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


def macs(batch, seq):
    return batch * seq * (4 * D * D + 2 * D * FFN) + 2 * batch * seq * seq * D


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "block.onnx")
        torch.onnx.export(Block().eval(), torch.randn(2, 16, D), path, opset_version=13,
                          input_names=["hidden"], output_names=["output"],
                          dynamic_axes={"hidden": {0: "batch", 1: "sequence"},
                                        "output": {0: "batch", 1: "sequence"}})
        model = onnx.load(path)
    for init in model.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
            init.ClearField(field)
    onnx.save(model, os.path.join(out, "gpt-block.onnx"))
    golden = {"dims": {"batch": 2, "sequence": 128}, "macs": macs(2, 128),
              "macs_all_one": macs(1, 1), "symbolic": ["batch", "sequence"]}
    with open(os.path.join(out, "gpt-block.golden.json"), "w") as f:
        json.dump(golden, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
