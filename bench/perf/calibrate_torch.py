"""Adds PyTorch's measured kernel ceilings to a `keel perf calibrate` device file.

The hardware roofline (FMA peak, triad bandwidth) bounds what any code can do; a framework
reaches a fraction of it that depends on the library behind each kernel class (Debian's
PyTorch 1.13 runs 3x3 convolutions in oneDNN but GEMMs in the generic reference BLAS). This
script measures that fraction on generic layer shapes -- none taken from the validation
models -- and stores one ceiling per kernel class plus the fixed cost of dispatching an op:

    /usr/bin/python3 bench/perf/calibrate_torch.py cpu.json [--threads 1]

Times are CPU time of the calling thread (time.thread_time), the best of repeated runs (the
run least disturbed by other work on a shared machine), the same clock and rule keel perf
calibrate uses, so a busy shared machine measures the hardware's rate.
Each class's ceiling is the median of its shapes' rates (a mean of times would let the one
slowest shape decide).
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

# (in_channels, out_channels, kernel, spatial, groups, stride): a grid of generic shapes,
# powers of two, none taken from the validation models.
CONV_KXK = [(32, 32, 3, 64, 1, 1), (64, 64, 3, 32, 1, 1), (128, 128, 3, 16, 1, 1), (256, 256, 3, 8, 1, 1),
            (64, 64, 5, 32, 1, 1), (64, 128, 3, 32, 1, 2)]
CONV_1X1 = [(32, 128, 1, 64, 1, 1), (64, 256, 1, 32, 1, 1), (128, 512, 1, 32, 1, 1), (256, 1024, 1, 16, 1, 1),
            (512, 128, 1, 16, 1, 1), (1024, 256, 1, 8, 1, 1), (256, 256, 1, 8, 1, 1)]
CONV_DW = [(32, 32, 3, 64, 32, 1), (64, 64, 3, 32, 64, 2), (128, 128, 3, 32, 128, 1), (256, 256, 5, 16, 256, 1),
           (512, 512, 3, 16, 512, 1), (128, 128, 5, 32, 128, 2)]
GEMM = [(64, 1024, 1024), (256, 512, 2048), (32, 2048, 512), (128, 1024, 4096), (128, 4096, 1024)]  # (M, K, N)
ATTENTION = [(8, 256, 64), (16, 64, 32), (4, 512, 64)]  # (heads, seq, head_dim)
POOL = [(32, 128, 3, 2), (64, 64, 2, 2), (128, 32, 3, 1), (256, 16, 2, 2)]  # (channels, spatial, kernel, stride)


def cpu_time(fn, reps):
    fn()  # warm-up: first-call allocation and kernel selection
    samples = []
    for _ in range(reps):
        start = time.thread_time()
        fn()
        samples.append(time.thread_time() - start)
    return min(samples)


def conv_rate(shapes, reps, per_byte=False):
    """Median FLOP/s (or, with per_byte, bytes/s counted as keel does: input, weight, bias and
    output once each) over the shapes."""
    rates = []
    for cin, cout, k, hw, groups, stride in shapes:
        x = torch.randn(1, cin, hw, hw)
        w = torch.randn(cout, cin // groups, k, k)
        b = torch.randn(cout)
        out = (hw + 2 * (k // 2) - k) // stride + 1
        seconds = cpu_time(lambda: F.conv2d(x, w, b, stride=stride, padding=k // 2, groups=groups), reps)
        if per_byte:
            rates.append(4.0 * (x.numel() + w.numel() + b.numel() + cout * out * out) / seconds)
        else:
            rates.append(2.0 * cout * out * out * (cin // groups) * k * k / seconds)
    return statistics.median(rates)


def gemm_rate(reps):
    rates = []
    for m, k, n in GEMM:
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        rates.append(2.0 * m * k * n / cpu_time(lambda: F.linear(x, w, b), reps))
    return statistics.median(rates)


def attention_rate(reps):
    rates = []
    for heads, seq, d in ATTENTION:
        q, k = torch.randn(1, heads, seq, d), torch.randn(1, heads, d, seq)
        p, v = torch.randn(1, heads, seq, seq), torch.randn(1, heads, seq, d)
        flops = 2.0 * heads * seq * seq * d
        rates.append(flops / cpu_time(lambda: torch.matmul(q, k), reps))
        rates.append(flops / cpu_time(lambda: torch.matmul(p, v), reps))
    return statistics.median(rates)


def pool_rate(reps):
    # Windowed pooling in bytes/s: input and output once each, as keel counts MaxPool/AveragePool.
    rates = []
    for channels, hw, k, stride in POOL:
        x = torch.randn(1, channels, hw, hw)
        out = (hw + 2 * (k // 2) - k) // stride + 1
        moved = 4.0 * (x.numel() + channels * out * out)
        rates.append(moved / cpu_time(lambda: F.max_pool2d(x, k, stride, k // 2), reps))
        rates.append(moved / cpu_time(lambda: F.avg_pool2d(x, k, stride, k // 2), reps))
    return statistics.median(rates)


def overhead_us(reps):
    a, b = torch.ones(1), torch.ones(1)
    per_call = cpu_time(lambda: [torch.add(a, b) for _ in range(1000)], reps) / 1000
    return per_call * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", help="device file written by `keel perf calibrate --out`")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with torch.no_grad():
        ceilings = {
            "conv_kxk": conv_rate(CONV_KXK, args.reps),
            "conv_1x1": conv_rate(CONV_1X1, args.reps),
            "gemm": gemm_rate(args.reps),
            "attention_matmul": attention_rate(args.reps),
        }
        # Depthwise convolutions and pooling do a few operations per element they move: their
        # rate in FLOP/s changes with the kernel size while their rate in bytes/s does not.
        byte_ceilings = {
            "conv_depthwise": conv_rate(CONV_DW, args.reps, per_byte=True),
            "pool": pool_rate(args.reps),
        }
        overhead = overhead_us(args.reps)
    with open(args.device) as f:
        doc = json.load(f)
    doc["sources"]["keel-torch-ceilings"] = {
        "title": f"PyTorch {torch.__version__} kernel ceilings measured by bench/perf/calibrate_torch.py "
                 f"({args.threads} thread{'s' if args.threads > 1 else ''})",
        "url": "https://pytorch.org/docs/1.13/",
    }
    device = doc["gpus"][0]
    device["ceilings_tflops"] = {k: v / 1e12 for k, v in ceilings.items()}
    device["ceilings_gbs"] = {k: v / 1e9 for k, v in byte_ceilings.items()}
    device["overhead_us"] = overhead
    if "keel-torch-ceilings" not in device["source"]:
        device["source"].append("keel-torch-ceilings")
    with open(args.device, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    peak = device["tflops"]["fp32"] * 1e3
    for k, v in ceilings.items():
        print(f"{k:18} {v / 1e9:8.2f} GFLOP/s  ({100 * v / 1e9 / peak:5.1f}% of the {peak:.0f} GFLOP/s FMA peak)")
    dram = device["bandwidth_gbs"]
    for k, v in byte_ceilings.items():
        print(f"{k:18} {v / 1e9:8.2f} GB/s      ({100 * v / 1e9 / dram:5.1f}% of the {dram:.0f} GB/s triad from DRAM)")
    print(f"{'op dispatch':18} {overhead:8.2f} us")


if __name__ == "__main__":
    main()
