"""Regenerates the small graphs tests/perf/onnx_model_test.cpp counts by hand.

    /usr/bin/python3 tests/data/perf/make_small_graphs.py tests/data/perf

Each is exported by torch.onnx.export (random weights) at opset 14, then its initializers lose
their data (names, types and dims stay: counting needs only shapes). Each holds one construct
whose count the test derives from the sizes below:

  lstm.onnx     nn.LSTM(input 16, hidden 32, 2 layers, bidirectional), x [seq 10, batch 3, 16]
  gru.onnx      nn.GRU(input 16, hidden 32), x [seq 10, batch 3, 16]
  einsum.onnx   torch.einsum("bhqd,bhkd->bhqk") of two [2, 4, 8, 16] inputs, then
                torch.einsum("bij,jk->bik") of a [2, 8, 16] input with a [16, 24] weight
  embed.onnx    nn.Embedding(1000, 64) looked up with 12 ids [3, 4], tied to a 64 -> 1000
                head (the exporter writes the transposed table as a second initializer)
  token.onnx    a class token [1, 1, 8] expanded to the batch (Tensor.expand(n, -1, -1), as
                torchvision's ViT does: ConstantOfShape -> Equal -> Where -> Expand), joined to
                x [2, 4, 8] and projected by Linear(8, 16)
  pad.onnx      x [1, 6, 6, 4] padded to a multiple of 4 the way torchvision's Swin pads to its
                window (F.pad by amounts computed from x.shape: Mod, ConstantOfShape, a [-1, 2]
                Reshape, a reversing Slice, Transpose), then Linear(4, 8) on [1, 8, 8, 4]
  pads.onnx     20 such blocks in a row (padding, Linear(4, 4)): each block's shape is known
                only once the previous block's padding is folded
  mlp.onnx      Linear(64, 256) and Linear(256, 64) on x [2, 64]: two exporter-transposed
                weights with each other's shape that are not tied
  bn.onnx       Conv2d(3, 8, 3, bias=False) + BatchNorm2d(8) + ReLU on a 1x3x8x8 input,
                exported in eval mode (the exporter folds the batch norm into the conv)
"""
import os
import sys

import onnx
import torch
import torch.nn as nn


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(16, 32, num_layers=2, bidirectional=True)

    def forward(self, x):
        return self.rnn(x)[0]


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(16, 32)

    def forward(self, x):
        return self.rnn(x)[0]


class Einsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 24))

    def forward(self, q, k, x):
        return torch.einsum("bhqd,bhkd->bhqk", q, k), torch.einsum("bij,jk->bik", x, self.w)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(1000, 64)

    def forward(self, ids):
        x = self.tok(ids)
        return (x @ self.tok.weight.t()).reshape(12, 1000)


class Token(nn.Module):
    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(torch.zeros(1, 1, 8))
        self.proj = nn.Linear(8, 16)

    def forward(self, x):
        return self.proj(torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1))


class Pad(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 8)

    def forward(self, x):
        _, h, w, _ = x.shape
        pad_r = (4 - w % 4) % 4
        pad_b = (4 - h % 4) % 4
        return self.proj(nn.functional.pad(x, (0, 0, 0, pad_r, 0, pad_b)))


class Pads(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(20))

    def forward(self, x):
        for block in self.blocks:
            _, h, w, _ = x.shape
            x = block(nn.functional.pad(x, (0, 0, 0, (4 - w % 4) % 4, 0, (4 - h % 4) % 4)))
        return x


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x.reshape(2, 1, 64)))).reshape(2, 64)


class Bn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def export(model, args, path, names):
    with torch.no_grad():
        torch.onnx.export(model.eval(), args, path, opset_version=14, do_constant_folding=True,
                          input_names=names)
    graph = onnx.load(path)
    for init in graph.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
            init.ClearField(field)
    onnx.save(graph, path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    export(Lstm(), (torch.randn(10, 3, 16),), os.path.join(out, "lstm.onnx"), ["x"])
    export(Gru(), (torch.randn(10, 3, 16),), os.path.join(out, "gru.onnx"), ["x"])
    export(Einsum(), (torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16), torch.randn(2, 8, 16)),
           os.path.join(out, "einsum.onnx"), ["q", "k", "x"])
    export(Embed(), (torch.randint(0, 1000, (3, 4)),), os.path.join(out, "embed.onnx"), ["ids"])
    export(Token(), (torch.randn(2, 4, 8),), os.path.join(out, "token.onnx"), ["x"])
    export(Pad(), (torch.randn(1, 6, 6, 4),), os.path.join(out, "pad.onnx"), ["x"])
    export(Pads(), (torch.randn(1, 6, 6, 4),), os.path.join(out, "pads.onnx"), ["x"])
    export(Mlp(), (torch.randn(2, 64),), os.path.join(out, "mlp.onnx"), ["x"])
    export(Bn(), (torch.randn(1, 3, 8, 8),), os.path.join(out, "bn.onnx"), ["x"])


if __name__ == "__main__":
    main()
