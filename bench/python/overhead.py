"""The keel Python package against the keel CLI, side by side in one run.

    PYTHONPATH=build/release/python python3 bench/python/overhead.py build/release/tools/keel/keel TRACE

Rows: Generator.normal(2**26, out=buf) against `keel rand bench` (one thread, best of 3, the
same generator and count), the cost of one small call (1 M calls of normal(4)), keel.mem.replay
against `keel mem replay --json` on one trace (both read the file, replay every device and
build the document; the CLI's wall time is its process's, and CPU time, user + system, is
compared too), and a snapshot dict converted.
"""

import json
import pickle
import resource
import subprocess
import sys
import time

import numpy as np

import keel

exe, trace = sys.argv[1], sys.argv[2]
N = 1 << 26


def best(f, repeats=3):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


rows = []
for dist, method, kwargs in (("normal", "normal", {}), ("uniform", "uniform", {}), ("raw", "raw", {})):
    cli = json.loads(subprocess.run([exe, "rand", "bench", "--generator", "philox4_32_10", "--count", str(N),
                                     "--repeats", "3", "--json"], capture_output=True, text=True, check=True).stdout)
    cli_gsps = next(r["keel_gsps"] for r in cli["results"] if r["dist"] == dist and r["threads"] == 1)
    g = keel.rand.Generator("philox4_32_10", seed=1, threads=1)
    buf = np.empty(N, dtype=np.uint32 if dist == "raw" else np.float32)
    seconds = best(lambda: getattr(g, method)(out=buf, **kwargs))
    py_gsps = N / seconds / 1e9
    rows.append((f"Generator.{method}(2**26, out=buf), 1 thread", f"{py_gsps:.3f} G/s", f"{cli_gsps:.3f} G/s",
                 f"{py_gsps / cli_gsps:.2f}"))

g = keel.rand.Generator("philox4_32_10", seed=1)
calls = 1_000_000
t = time.perf_counter()
for _ in range(calls):
    g.normal(4)
per_call = (time.perf_counter() - t) / calls * 1e9
rows.append(("normal(4), 1 M calls", f"{per_call:.0f} ns per call", "-", "-"))

snap_seconds = best(lambda: keel.mem.replay(trace))
cli_seconds = best(lambda: subprocess.run([exe, "mem", "replay", trace, "--json"], capture_output=True, check=True))
rows.append(("keel.mem.replay(path) vs keel mem replay --json, wall", f"{snap_seconds * 1e3:.1f} ms",
             f"{cli_seconds * 1e3:.1f} ms", f"{snap_seconds / cli_seconds:.2f}"))


# CPU time of the same work (read, parse, replay every device, build the document): on a busy
# machine wall time measures the neighbours; the CLI's also holds its process start.
def cpu_of_python():
    t = time.process_time()
    keel.mem.replay(trace)
    return time.process_time() - t


def cpu_of_cli():
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([exe, "mem", "replay", trace, "--json"], capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


py_cpu = min(cpu_of_python() for _ in range(5))
cli_cpu = min(cpu_of_cli() for _ in range(5))
rows.append(("keel.mem.replay(path) vs keel mem replay --json, CPU time", f"{py_cpu * 1e3:.1f} ms",
             f"{cli_cpu * 1e3:.1f} ms", f"{py_cpu / cli_cpu:.2f}"))


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("no globals")


as_dict = NoGlobals(open(trace, "rb")).load()
rows.append(("load_snapshot(dict from torch.cuda.memory._snapshot())",
             f"{best(lambda: keel.mem.load_snapshot(as_dict), 5) * 1e3:.1f} ms", "-", "-"))

print("| measurement | keel (Python) | keel (CLI) | Python / CLI |")
print("|---|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(r) + " |")
