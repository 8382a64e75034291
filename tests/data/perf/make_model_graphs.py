"""Regenerates the weight-free ONNX graphs that tests/perf/onnx_model_test.cpp counts.

    /usr/bin/python3 tests/data/perf/make_model_graphs.py tests/data/perf

Each model of bench/perf/models.py named below is exported with torch.onnx.export (random
weights, nothing downloaded); then every initializer keeps its name, type and dims but loses
its data, so the file holds the full graph in a few kilobytes. Counting needs only shapes.
"""
import os
import sys
import tempfile

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "perf"))
import models  # noqa: E402

GRAPHS = ["resnet50"]


def strip(src, dst):
    model = onnx.load(src)
    for init in model.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
            init.ClearField(field)
    onnx.save(model, dst)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        for name in GRAPHS:
            full = os.path.join(tmp, name + ".onnx")
            models.export(name, full)
            strip(full, os.path.join(out, name + "-graph.onnx"))


if __name__ == "__main__":
    main()
