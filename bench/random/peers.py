#!/usr/bin/python3
"""keel's normals against the CPU generators users call, one table from one script.

Same count, same thread count, best of --repeats, wall time of the fill alone (buffers
allocated beforehand):

  keel Philox (generator::set_threads(T))       float32, float64  keel_random_peers
  libcurand host Philox (T generators, slices)  float32, float64  keel_random_peers
  std::normal_distribution over std::mt19937    float32, float64  keel_random_peers
  torch.randn(out=...)  (torch.set_num_threads(T); MT19937 + vectorised Box-Muller)
  numpy Generator(Philox()).standard_normal, default_rng() (PCG64): T generators from one
  SeedSequence fill T slices on T Python threads (numpy releases the GIL while it fills)

Prints a Markdown table: peer, dtype, threads, G/s and keel's ratio to it (keel at the same
dtype and thread count). --simd avx2 runs keel's AVX2 kernels on an AVX-512 machine.

  /usr/bin/python3 bench/random/peers.py --harness build/release/bench/random/keel_random_peers
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time


def cpu_description():
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model in ("unknown", "", "x86_64"):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags else "AVX2 + FMA" if {"avx2", "fma"} <= flags else "no AVX2"
    return model, isa


def best_of(repeats, fill):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fill()
        best = min(best, time.perf_counter() - t0)
    return best


def on_threads(threads, part):
    """Runs part(i) for i in range(threads) on `threads` Python threads (the caller's among them)."""
    pool = [threading.Thread(target=part, args=(i,)) for i in range(1, threads)]
    for t in pool:
        t.start()
    part(0)
    for t in pool:
        t.join()


def torch_rows(count, threads, repeats):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    rows = []
    for dtype, name in ((torch.float32, "float32"), (torch.float64, "float64")):
        out = torch.empty(count, dtype=dtype)
        s = best_of(repeats, lambda: torch.randn(count, dtype=dtype, out=out))
        rows.append({"peer": f"torch.randn (torch {torch.__version__})", "dtype": name,
                     "threads": threads, "seconds": s})
    return rows


def numpy_rows(count, threads, repeats):
    import numpy as np

    rows = []
    for label, make in (("numpy Generator(Philox)", lambda ss: np.random.Generator(np.random.Philox(ss))),
                        ("numpy default_rng (PCG64)", np.random.default_rng)):
        for dtype in (np.float32, np.float64):
            gens = [make(ss) for ss in np.random.SeedSequence(1234).spawn(threads)]
            out = np.empty(count, dtype=dtype)
            bounds = [count * i // threads for i in range(threads + 1)]

            def fill():
                on_threads(threads, lambda i: gens[i].standard_normal(
                    dtype=dtype, out=out[bounds[i]:bounds[i + 1]]))

            rows.append({"peer": f"{label} (numpy {np.__version__})",
                         "dtype": np.dtype(dtype).name, "threads": threads,
                         "seconds": best_of(repeats, fill)})
    return rows


def harness_rows(harness, count, threads, repeats, simd):
    env = dict(os.environ)
    if simd:
        env["KEEL_RANDOM_SIMD"] = simd
    out = subprocess.run([harness, "--count", str(count), "--threads", str(threads),
                          "--repeats", str(repeats)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", required=True, help="path of the keel_random_peers program")
    ap.add_argument("--count", type=int, default=1 << 26)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--simd", choices=["avx2", "scalar"], help="cap keel's SIMD level (KEEL_RANDOM_SIMD)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead")
    a = ap.parse_args()

    rows = []
    for t in (int(x) for x in a.threads.split(",")):
        rows += harness_rows(a.harness, a.count, t, a.repeats, a.simd)
        rows += torch_rows(a.count, t, a.repeats)
        rows += numpy_rows(a.count, t, a.repeats)
    for r in rows:
        r["gsps"] = a.count / r["seconds"] * 1e-9
    keel = {(r["dtype"], r["threads"]): r["gsps"] for r in rows if r["peer"].startswith("keel")}
    for r in rows:
        r["keel_ratio"] = keel[(r["dtype"], r["threads"])] / r["gsps"]
    model, isa = cpu_description()
    if a.json:
        json.dump({"cpu": model, "isa": isa, "simd": a.simd or "best", "count": a.count,
                   "rows": rows}, sys.stdout, indent=1)
        print()
        return
    print(f"CPU: {model} ({isa}); keel SIMD: {a.simd or 'best available'}; "
          f"{a.count} normals, best of {a.repeats}")
    print()
    print("| peer | dtype | threads | G/s | keel / peer |")
    print("|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["threads"], r["dtype"], -r["gsps"])):
        print(f"| {r['peer']} | {r['dtype']} | {r['threads']} | {r['gsps']:.3f} | {r['keel_ratio']:.2f} |")


if __name__ == "__main__":
    main()
