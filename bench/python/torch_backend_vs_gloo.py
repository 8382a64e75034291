"""keel's torch.distributed backend against Gloo: the same all_reduce, the same tensors, in the
same processes, measured side by side (interleaved rounds), and the results compared.

    keel comm launch -n 2 -- python3 bench/python/torch_backend_vs_gloo.py
    keel comm launch -n 4 -- python3 bench/python/torch_backend_vs_gloo.py --sizes 8,1M,16M,64M
    keel comm launch -n 2 -- python3 bench/python/torch_backend_vs_gloo.py --check-only

Each rank makes both process groups (keel as the default group, Gloo with new_group). For
every size, `--rounds` rounds alternate which backend goes first; a round times `--iters`
back-to-back blocking all_reduce(SUM) calls on float32 after a barrier, and a rank's time is
the slowest rank's (a max over ranks). The median round is reported: time per call, algbw =
bytes / time and busbw = algbw * 2(n-1)/n (nccl-tests' convention), and keel/Gloo ratios
(busbw: higher is better; time: lower is better). Then the check: all_reduce SUM over every
dtype both backends reduce (float32, float64, float16, int32, int64, uint8) and sizes from 0
to 64 MiB; integers must be equal, floats within rtol 1e-5 (float16 1e-2). Rank 0 prints the
table (and --json a document).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.distributed as dist

import keel.torch  # noqa: F401

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_of(text):
    text = text.strip().upper().rstrip("B").rstrip("I")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def human(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def time_round(tensor, group, iters, gloo):
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor, group=group)
    took = (time.perf_counter() - start) / iters
    worst = torch.tensor([took], dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX, group=gloo)
    return worst.item()


def bench(sizes, rounds, gloo, n, min_iters):
    rows = []
    for size in sizes:
        count = max(1, size // 4)
        t = torch.ones(count, dtype=torch.float32)
        # iterations per round: ~0.2 s of Gloo, at least min_iters
        probe = time_round(t, gloo, 2, gloo)
        iters = max(min_iters, min(2000, int(0.2 / max(probe, 1e-6))))
        for g in (None, gloo):  # warm-up
            time_round(t, g, max(1, iters // 4), gloo)
        times = {"keel": [], "gloo": []}
        for r in range(rounds):
            order = [("keel", None), ("gloo", gloo)]
            if r % 2:
                order.reverse()
            for name, g in order:
                times[name].append(time_round(t, g, iters, gloo))
        row = {"bytes": count * 4, "iters": iters, "rounds": rounds}
        for name in ("keel", "gloo"):
            med = statistics.median(times[name])
            algbw = count * 4 / med / 1e9
            row[name] = {
                "time_us": med * 1e6,
                "algbw": algbw,
                "busbw": algbw * 2 * (n - 1) / n,
                "rounds_us": [x * 1e6 for x in times[name]],
            }
        row["busbw_ratio"] = row["keel"]["busbw"] / row["gloo"]["busbw"]
        row["time_ratio"] = row["keel"]["time_us"] / row["gloo"]["time_us"]
        rows.append(row)
    return rows


def check(max_bytes, gloo, rank):
    dtypes = [torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.uint8]
    sizes = [0, 1, 8, 1000, 4096, 65536 + 3, 1 << 20, 16 << 20, 64 << 20]
    cases = wrong = 0
    for dtype in dtypes:
        esize = torch.tensor([], dtype=dtype).element_size()
        for nbytes in sizes:
            if nbytes > max_bytes:
                continue
            count = nbytes // esize
            g = torch.Generator().manual_seed(17 + rank + count)
            if dtype.is_floating_point:
                x = torch.randn(count, generator=g).to(dtype)
            else:
                x = torch.randint(0, 100, (count,), generator=g).to(dtype)
            a, b = x.clone(), x.clone()
            dist.all_reduce(a)
            dist.all_reduce(b, group=gloo)
            if dtype.is_floating_point:
                tol = 1e-2 if dtype == torch.float16 else 1e-5
                good = torch.allclose(a.double(), b.double(), rtol=tol, atol=tol)
            else:
                good = torch.equal(a, b)
            cases += 1
            if not good:
                wrong += 1
                if rank == 0:
                    print(f"# MISMATCH {dtype} {count} elements", flush=True)
    return cases, wrong


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8,1M,16M,64M", help="all_reduce sizes in bytes (K, M suffixes)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-iters", type=int, default=3)
    p.add_argument("--check-max", default="64M", help="largest size of the equality check")
    p.add_argument("--check-only", action="store_true")
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--json", help="rank 0 writes the results here")
    args = p.parse_args()
    dist.init_process_group("keel", timeout=datetime.timedelta(seconds=300))
    gloo = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    rows = [] if args.check_only else bench([size_of(s) for s in args.sizes.split(",")],
                                            args.rounds, gloo, n, args.min_iters)
    cases = wrong = 0
    if not args.no_check:
        cases, wrong = check(size_of(args.check_max), gloo, rank)
    if rank == 0:
        print(f"# {n} ranks, torch {torch.__version__}, {os.cpu_count()} CPUs: {cpu_model()}")
        print(f"# all_reduce SUM float32, median of {args.rounds} interleaved rounds; busbw = algbw * 2(n-1)/n")
        print(f"# {'size':>10} {'iters':>6} | {'keel us':>10} {'gloo us':>10} {'time k/g':>8} |"
              f" {'keel busbw':>10} {'gloo busbw':>10} {'busbw k/g':>9}")
        for r in rows:
            k, g = r["keel"], r["gloo"]
            print(f"  {human(r['bytes']):>10} {r['iters']:>6} | {k['time_us']:>10.1f} {g['time_us']:>10.1f}"
                  f" {r['time_ratio']:>8.2f} | {k['busbw']:>10.3f} {g['busbw']:>10.3f} {r['busbw_ratio']:>9.2f}")
        if cases:
            print(f"# check: {cases} cases (6 dtypes x sizes 0..{args.check_max}), {wrong} differ from Gloo")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ranks": n, "cpu": cpu_model(), "rows": rows, "check": {"cases": cases, "wrong": wrong}}, f, indent=1)
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
