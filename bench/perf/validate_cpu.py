"""Predicted vs measured latency of real models on this CPU.

For each model (random weights, built from its config; nothing downloaded): export to ONNX
with torch.onnx.export, predict with `keel perf model FILE.onnx --gpu DEVICE.json --json`,
run it in PyTorch (no_grad, eval) and compare. Prints a Markdown table.

    keel perf calibrate --threads 1 --out cpu.json
    /usr/bin/python3 bench/perf/calibrate_torch.py cpu.json
    /usr/bin/python3 bench/perf/validate_cpu.py --keel build/release/tools/keel/keel \
        --device cpu.json --work /tmp/keel-validate

Measured time is the best CPU time of the calling thread (time.thread_time) over --runs
forward passes after one warm-up, with --threads intra-op threads (default 1): the clock and
the best-of rule the calibration uses (on a shared machine the least disturbed run is the
closest to what the hardware does).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

MODELS = ["resnet18", "resnet50", "mobilenet_v3_large", "bert_base", "gpt2"]


def measure_ms(name, runs):
    model, example = models.build(name)
    with torch.no_grad():
        model(example)
        samples = []
        for _ in range(runs):
            start = time.thread_time()
            model(example)
            samples.append(time.thread_time() - start)
    return min(samples) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keel", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--work", required=True, help="folder for the exported ONNX files")
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in args.models:
        path = os.path.join(args.work, name + ".onnx")
        if not os.path.exists(path):
            models.export(name, path)
        out = subprocess.run([args.keel, "perf", "model", path, "--gpu", args.device, "--json"],
                             check=True, capture_output=True, text=True).stdout
        report = json.loads(out)
        measured = measure_ms(name, args.runs)
        rows.append({"model": name, "gmacs": report["macs"] / 1e9, "nodes": len(report["nodes"]),
                     "roofline_ms": report["roofline_ms"], "predicted_ms": report["predicted_ms"],
                     "measured_ms": measured,
                     "error_pct": 100 * (report["predicted_ms"] - measured) / measured})
        print(f"{name}: predicted {report['predicted_ms']:.1f} ms, measured {measured:.1f} ms", file=sys.stderr)
    print("| model | GMACs | ONNX nodes | hardware roofline ms | keel predicted ms | PyTorch measured ms | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['gmacs']:.3f} | {r['nodes']} | {r['roofline_ms']:.1f} | "
              f"{r['predicted_ms']:.1f} | {r['measured_ms']:.1f} | {r['error_pct']:+.1f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if all(abs(r["error_pct"]) <= 30 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
