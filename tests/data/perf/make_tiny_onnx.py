"""Regenerates tiny.onnx, the small graph tests/perf/onnx_model_test.cpp counts by hand.

    /usr/bin/python3 tests/data/perf/make_tiny_onnx.py tests/data/perf/tiny.onnx

Conv 3->8 3x3 (55,296 MACs), an attention pattern over the 8 channels (two activation
MatMuls of 16,384 MACs each, Softmax), MaxPool and a 512->10 Gemm (5,120 MACs): 93,184.
"""
import sys

import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        a = y.reshape(1, 8, 256)
        z = torch.softmax(a @ a.transpose(1, 2), dim=-1) @ a
        p = nn.functional.max_pool2d(y + z.reshape(1, 8, 16, 16), 2)
        return self.fc(p.flatten(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.onnx.export(Tiny().eval(), torch.randn(1, 3, 16, 16), sys.argv[1], opset_version=13,
                      input_names=["input"], output_names=["output"])
