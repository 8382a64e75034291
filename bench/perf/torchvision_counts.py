"""Counts of every torchvision classification model against torchvision's published GFLOPS.

torchvision (0.15 and later) publishes, in each weight's metadata, `_ops`: the GFLOPS of one
forward pass at the weight's crop size, counted as multiply-adds (ResNet-50: 4.089). Debian's
torchvision 0.14 has the models and the crop sizes but not `_ops`, so the published values are
kept, with their source, in tests/data/perf/torchvision_ops.json. For each model and crop size
this script exports the model (random weights, batch 1, eval, opset 14), runs
`keel perf model FILE --json` and compares keel's MACs, in G rounded to 3 decimals as
torchvision rounds, with the published value. Prints a Markdown table; exit 1 on a mismatch.

    /usr/bin/python3 bench/perf/torchvision_counts.py --keel build/release/tools/keel/keel \\
        --work /tmp/keel-torchvision [--models resnet50 vgg16 ...]

Exported graphs are kept in --work (weights stripped), so a second run only counts.
"""
import argparse
import json
import os
import subprocess
import sys

import onnx
import torch
import torchvision
from torchvision import models as tvm

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "..", "..", "tests", "data", "perf", "torchvision_ops.json")


def crop_sizes(name):
    """{weight name: crop size} of the model's ImageNet weights in this torchvision."""
    sizes = {}
    for w in tvm.get_model_weights(name):
        t = w.transforms()
        crop = t.crop_size[0] if isinstance(t.crop_size, (list, tuple)) else t.crop_size
        sizes[w.name] = int(crop)
    return sizes


def export(name, size, path):
    torch.manual_seed(0)
    # ViT's position embedding is built for one image size: give it the crop's.
    kwargs = {"image_size": size} if name.startswith("vit_") else {}
    model = tvm.get_model(name, weights=None, **kwargs).eval()
    # Gradients stay enabled: under no_grad, eval-mode nn.MultiheadAttention takes its fused
    # fast path (aten::_native_multi_head_attention), which torch 1.13 cannot export.
    torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=14,
                      do_constant_folding=True, input_names=["input"])
    graph = onnx.load(path)
    for init in graph.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
            init.ClearField(field)
    onnx.save(graph, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keel", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--models", nargs="*")
    parser.add_argument("--export-only", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    published = json.load(open(OPS))["models"] if os.path.exists(OPS) else {}
    names = args.models or tvm.list_models(module=tvm)
    rows, bad = [], 0
    for name in names:
        for weight, size in crop_sizes(name).items():
            path = os.path.join(args.work, f"{name}-{size}.onnx")
            if not os.path.exists(path):
                try:
                    export(name, size, path)
                except Exception as e:  # an export Debian's torch cannot do: say so
                    rows.append((name, weight, size, None, None, f"export failed: {e}"[:80]))
                    continue
            if args.export_only:
                continue
            ref = published.get(name, {}).get(weight)
            out = subprocess.run([args.keel, "perf", "model", path, "--json"], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                rows.append((name, weight, size, None, ref, out.stderr.strip()[:80]))
                bad += 1
                continue
            gmacs = json.loads(out.stdout)["macs"] / 1e9
            verdict = "no published value" if ref is None else (
                "exact" if round(gmacs, 3) == ref else f"{100 * (gmacs - ref) / ref:+.2f}%")
            bad += ref is not None and verdict != "exact"
            rows.append((name, weight, size, gmacs, ref, verdict))
    print("| model | weights | crop | keel GMACs | torchvision _ops | |")
    print("|---|---|---:|---:|---:|---|")
    for name, weight, size, g, ref, verdict in rows:
        print(f"| {name} | {weight} | {size} | {'' if g is None else f'{g:.3f}'} | "
              f"{'' if ref is None else ref} | {verdict} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
