"""Writes the TorchScript models the keel::serve tests load, into the folder given.

affine.pt     forward(x: [B, 4] float32) -> x @ W + b, W[i][j] = i - j / 8, b[j] = j
named.pt      forward(pixels, scale) -> {"sum": (pixels * scale).sum(1), "max": pixels.amax(1)}
tuple.pt      forward(a: int64) -> (a + 1, a * 2)
corrupt.pt    bytes that are not a TorchScript archive
"""
import os
import sys

import torch


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        w = torch.tensor([[i - j / 8 for j in range(3)] for i in range(4)], dtype=torch.float32)
        self.weight = torch.nn.Parameter(w)
        self.register_buffer("bias", torch.arange(3, dtype=torch.float32))

    def forward(self, x):
        return x @ self.weight + self.bias


class Named(torch.nn.Module):
    def forward(self, pixels, scale):
        return {"sum": (pixels * scale).sum(1), "max": pixels.amax(1)}


class Pair(torch.nn.Module):
    def forward(self, a):
        return a + 1, a * 2


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.jit.script(Affine()).save(os.path.join(out, "affine.pt"))
    torch.jit.script(Named()).save(os.path.join(out, "named.pt"))
    torch.jit.script(Pair()).save(os.path.join(out, "tuple.pt"))
    with open(os.path.join(out, "corrupt.pt"), "wb") as f:
        f.write(b"PK\x03\x04 this is not a model" * 8)


if __name__ == "__main__":
    main(sys.argv[1])
