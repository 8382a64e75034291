#!/usr/bin/env python3
"""Side-by-side benchmark of `keel serve` against two plain-Python peers (bench/serve/peer_server.py)
on the same demo models (scripts/make-serve-demo.py, random weights) with the same client
(`keel serve bench`, closed loop):

  keel (batching)      keel serve on the demo repository
  keel (no batching)   the same repository without dynamic_batching blocks
  peer a (sequential)  http.server, one request at a time
  peer b (threaded)    Flask threaded + a worker thread per model (the forum recipe)

For each server it starts it on a free 127.0.0.1 port, waits for /v2/health/ready, checks a
few requests to each model (JSON and binary tensors; outputs agree between the two encodings
and with the first server that answered; keel also gets the classify ensemble), runs 16 clients over resnet18,bert,gpt2, and stops it (SIGTERM).
keel also gets resnet18 alone at 16 clients (batching on vs off), identity at 1 client (the
server's median overhead per request, compute excluded, as keel serve measures it and publishes
it on /metrics: keel_http_overhead_us) and wrk on identity with JSON tensors
(bench/serve/wrk_infer.lua). It prints a markdown table and the targets' ratios.

Usage: /usr/bin/python3 bench/serve/compare.py --keel build/release/tools/keel/keel
           [--duration 30] [--threads N] [--out results.md] [--peers-only] [--keep]
--peers-only skips the keel servers: the peers still get the checks, wrk, and the load
generator when --keel names a built keel. Needs python3-torch, python3-torchvision,
python3-flask and wrk.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import numpy as np

import kserve

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIXED = "resnet18,bert,gpt2"
PEER_MODELS = "resnet18,bert,gpt2,identity"


# ---------------------------------------------------------------- HTTP


def request(url, method="GET", body=None, headers=None, timeout=120):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request(method, u.path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process on a free port, ready once /v2/health/ready answers 200."""

    def __init__(self, label, command, log):
        self.label, self.port, self.metrics_port = label, free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [c.replace("{port}", str(self.port)).replace("{mport}", str(self.metrics_port))
                   for c in command]
        with open(log, "w") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=600):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                break
            try:
                if request(self.url + "/v2/health/ready", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        tail = open(self.log).read()[-3000:]
        sys.exit(f"{self.label} did not become ready; its log ({self.log}) ends:\n{tail}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                print(f"{self.label} ignored SIGTERM for 30 s: killed", file=sys.stderr)
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


# ---------------------------------------------------------------- the smoke check


def infer(url, model, inputs, binary):
    """inputs: {name: array} -> {name: array}, JSON or binary in both directions."""
    body, headers = kserve.encode_request(inputs, binary)
    status, response_headers, answer = request(f"{url}/v2/models/{model}/infer", "POST", body, headers)
    if status != 200:
        raise RuntimeError(f"{model}: HTTP {status}: {answer[:300]!r}")
    return kserve.decode_response(response_headers, answer)


def smoke(url, models, reference):
    """Each model once in JSON and once binary: same outputs, and the same as `reference`'s."""
    rng = np.random.default_rng(7)
    for model in models:
        status, _, body = request(f"{url}/v2/models/{model}")
        if status != 200:
            raise RuntimeError(f"GET /v2/models/{model}: HTTP {status}")
        meta = json.loads(body)
        inputs = {}
        for t in meta["inputs"]:
            shape = [1 if i == 0 and d < 0 else 5 if d < 0 else d for i, d in enumerate(t["shape"])]
            if t["datatype"].startswith("FP"):
                a = rng.standard_normal(shape).astype(kserve.DATATYPES[t["datatype"]])
            else:
                a = rng.integers(0, 100, shape).astype(kserve.DATATYPES[t["datatype"]])
            inputs[t["name"]] = a
        as_json, as_binary = infer(url, model, inputs, False), infer(url, model, inputs, True)
        for name, a in as_json.items():
            want = reference.setdefault((model, name), a)
            for got, what in ((as_binary[name], "binary"), (want, "the first server's")):
                if got.shape != a.shape or not np.allclose(got, a, rtol=1e-3, atol=1e-4):
                    raise RuntimeError(f"{model}.{name}: the JSON answer differs from {what}")
    return f"{len(models)} models ok (JSON = binary = reference)"


# ---------------------------------------------------------------- load


def bench(keel, url, models, concurrency, duration, rate=0):
    cmd = [keel, "serve", "bench", url, "--model", models, "--concurrency", str(concurrency),
           "--duration", str(duration), "--rate", str(rate), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration * 3 + 120)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {r.returncode}: {r.stderr.strip()[-1000:]}")
    return json.loads(r.stdout[r.stdout.index("{"):])["levels"][0]


def overhead(server):
    """keel serve's median server overhead per infer request (compute excluded), from /metrics."""
    status, _, body = request(f"http://127.0.0.1:{server.metrics_port}/metrics")
    m = re.search(rb'keel_http_overhead_us\{quantile="0.5"\} ([\d.]+)', body)
    if status != 200 or not m:
        raise RuntimeError(f"/metrics has no keel_http_overhead_us (HTTP {status})")
    return float(m.group(1))


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024


def overload(keel, server, sustainable, seconds):
    """resnet18 at 4x the sustainable rate (128 clients, open loop) for `seconds`: how fast the
    queue limit's 503s come back, and the server's RSS sampled every second."""
    samples, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            samples.append(rss_mib(server.proc.pid))
            stop.wait(1)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        level = bench(keel, server.url, "resnet18", 128, seconds, rate=4 * sustainable)
    finally:
        stop.set()
        watcher.join()
    # Flat: the mean of the last 20 s against the mean of seconds 10-30 (batches, buffers and
    # connection threads have settled by then).
    early, late = samples[10:30] or samples, samples[-20:]
    level.update(rss_settled_mib=sum(early) / len(early), rss_end_mib=sum(late) / len(late),
                 rss_max_mib=max(samples))
    return level


CEILING = """
import sys, time, torch
torch.set_num_threads(int(sys.argv[2]))
m = torch.jit.load(sys.argv[1])
best = {}
with torch.inference_mode():
    for n in (1, 8, 16, 1, 8, 16):
        x = torch.randn(n, 3, 224, 224)
        m(x)
        t, k = time.perf_counter(), 0
        while time.perf_counter() - t < 4:
            m(x)
            k += 1
        best[n] = max(best.get(n, 0), n * k / (time.perf_counter() - t))
print(best[1], max(best[8], best[16]))
"""


def batching_ceiling(repo, threads):
    """resnet18 run directly by torch in one process, no server: rows/s at batch 1 and at the
    better of 8 and 16. Their ratio bounds what any batching server can gain on this machine."""
    r = subprocess.run([sys.executable, "-c", CEILING, os.path.join(repo, "resnet18", "1", "model.pt"),
                        str(threads)], capture_output=True, text=True, timeout=300, check=True)
    one, batched = map(float, r.stdout.split())
    return {"throughput_rps": batched, "batch1_rps": one}


def wrk(url, seconds):
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", "-s", os.path.join(HERE, "wrk_infer.lua"), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(bad.group(1)) if bad else 0) + (sum(map(int, sockets.groups())) if sockets else 0)
    return {"throughput_rps": float(rps.group(1)) if rps else 0.0, "errors": errors}


# ---------------------------------------------------------------- report


def ms(level, key):
    v = level.get(key)
    return "" if v is None else f"{v / 1000:.2f}"


COLUMNS = ["requests", "errors", "req/s", "p50 ms", "p90 ms", "p99 ms", "server queue ms", "server compute ms",
           "server overhead p50 ms", "errors p99 ms", "RSS MiB (s 10-30 / last 20 s / max)"]


def table(rows):
    lines = ["| server | workload | clients | " + " | ".join(COLUMNS) + " |",
             "|---|---|" + "---:|" * (len(COLUMNS) + 1)]
    for server, workload, clients, lv in rows:
        cells = [lv.get("requests", ""), lv.get("errors", ""), f"{lv['throughput_rps']:.1f}"]
        cells += [ms(lv, k) for k in ("p50_us", "p90_us", "p99_us", "server_queue_us", "server_compute_us",
                                      "server_overhead_p50_us", "error_p99_us")]
        cells.append("" if "rss_end_mib" not in lv else
                     f"{lv['rss_settled_mib']:.0f} / {lv['rss_end_mib']:.0f} / {lv['rss_max_mib']:.0f}")
        lines.append(f"| {server} | {workload} | {clients} | " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


KB, KN, PA, PB = "keel (batching)", "keel (no batching)", "peer a (sequential)", "peer b (threaded)"
ALONE = "resnet18 alone"
OVERLOAD = "resnet18 at 4x its rate"
TORCH = "torch direct (no server)"
OPS = {">=": float.__ge__, "<=": float.__le__, "<": float.__lt__}


def targets(results):
    def get(server, workload, key):
        return results.get((server, workload), {}).get(key)

    def ratio_of(a, b):
        return None if not a or not b else a / b

    def ratio(server_a, server_b, workload, key):
        a, b = get(server_a, workload, key), get(server_b, workload, key)
        return None if not a or not b else a / b

    checks = [
        ("throughput keel / peer b (mixed, 16 clients)", ratio(KB, PB, MIXED, "throughput_rps"), ">= 2"),
        ("throughput keel / peer a (mixed, 16 clients)", ratio(KB, PA, MIXED, "throughput_rps"), ">= 1.5"),
        ("p99 keel / peer b (mixed, 16 clients)", ratio(KB, PB, MIXED, "p99_us"), "<= 1"),
        ("resnet18 throughput batching on / off", ratio(KB, KN, ALONE, "throughput_rps"), ">= 1.5"),
        ("  the model's own ceiling: torch direct, batch 8/16 vs 1",
         ratio_of(get(TORCH, ALONE, "throughput_rps"), get(TORCH, ALONE, "batch1_rps")), ">= 1.5"),
        ("identity median server overhead (HTTP + queue + batcher), us",
         get(KB, "identity", "server_overhead_p50_us"), "< 100"),
        ("wrk identity JSON req/s", get(KB, "identity wrk", "throughput_rps"), ">= 10000"),
        ("overload: the queue limit's errors answered, p99 ms",
         None if get(KB, OVERLOAD, "error_p99_us") is None else get(KB, OVERLOAD, "error_p99_us") / 1000,
         "< 10"),
        ("overload: RSS, mean of the last 20 s / of s 10-30", ratio_of(get(KB, OVERLOAD, "rss_end_mib"),
                                                           get(KB, OVERLOAD, "rss_settled_mib")), "<= 1.05"),
    ]
    lines = ["| target | measured | goal | met |", "|---|---:|---|---|"]
    for name, value, goal in checks:
        shown = "n/a" if value is None else f"{value:.2f}" if value < 100 else f"{value:.0f}"
        op, bound = goal.split()
        met = "" if value is None else "yes" if OPS[op](float(value), float(bound)) else "NO"
        lines.append(f"| {name} | {shown} | {goal} | {met} |")
    return "\n".join(lines)


def environment():
    probe = ("import torch; torch.ones(64, 64) @ torch.ones(64, 64); "
             "print(torch.__version__, torch.get_num_threads(), "
             "next((l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l.lower()), 'none'))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    version, threads, blas = (r.stdout.split() + ["?"] * 3)[:3]
    text = f"{os.cpu_count()} CPUs; torch {version} ({threads} threads); BLAS: {'/'.join(blas.split('/')[-2:])}"
    if not re.search("openblas|mkl|blis", blas, re.I):  # Debian's reference libblas3
        text += " (the reference BLAS makes every nn.Linear ~15x slower: install libopenblas0-openmp)"
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keel", help="the keel executable (load generator, and the server unless --peers-only)")
    ap.add_argument("--duration", type=int, default=30, help="seconds per load level")
    ap.add_argument("--wrk-duration", type=int, default=10)
    ap.add_argument("--overload-duration", type=int, default=60, help="seconds at 4x the sustainable rate")
    ap.add_argument("--threads", type=int, help="keel serve --threads")
    ap.add_argument("--out", help="also write the markdown here")
    ap.add_argument("--peers-only", action="store_true", help="skip the keel servers")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (repositories, logs)")
    args = ap.parse_args()
    keel = os.path.abspath(args.keel) if args.keel else None
    if not args.peers_only and not (keel and os.access(keel, os.X_OK)):
        sys.exit("--keel must name the built keel executable (or use --peers-only)")
    can_bench = keel is not None and os.access(keel, os.X_OK)
    have_wrk = shutil.which("wrk") is not None

    tmp = tempfile.mkdtemp(prefix="keel-serve-compare-")
    repo, plain = os.path.join(tmp, "repo"), os.path.join(tmp, "repo-no-batching")
    make = os.path.join(ROOT, "scripts", "make-serve-demo.py")
    print("building the demo repositories ...", file=sys.stderr)
    subprocess.run([sys.executable, make, repo], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, make, plain, "--no-batching", "--link-from", repo], check=True,
                   stdout=subprocess.DEVNULL)

    threads = ["--threads", str(args.threads)] if args.threads else []
    peer = [sys.executable, os.path.join(HERE, "peer_server.py"), "--repo", repo, "--models", PEER_MODELS,
            "--port", "{port}"]
    servers = [] if args.peers_only else [
        (KB, [keel, "serve", repo, "--http", "{port}", "--metrics-port", "{mport}", "--host", "127.0.0.1"]
         + threads, True),
        (KN, [keel, "serve", plain, "--http", "{port}", "--host", "127.0.0.1"] + threads, False)]
    servers += [(PA, peer + ["--mode", "sequential"], True), (PB, peer + ["--mode", "threaded"], True)]

    rows, results, reference, notes = [], {}, {}, []

    def attempt(label, what, run):
        try:
            return run()
        except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
            notes.append(f"{label}: {what} FAILED: {e}")
            print(f"  {what} failed: {e}", file=sys.stderr)

    def record(label, workload, clients, run):
        level = attempt(label, workload, run)
        if level is not None:
            rows.append((label, workload, clients, level))
            results[(label, workload)] = level
            print(f"  {workload}: {level['throughput_rps']:.1f} req/s, p99 {ms(level, 'p99_us') or '-'} ms",
                  file=sys.stderr)

    if not args.peers_only:
        print(f"{TORCH}: resnet18 at batch 1, 8 and 16", file=sys.stderr)
        record(TORCH, ALONE, 1, lambda: batching_ceiling(repo, args.threads or os.cpu_count()))
    try:
        for label, command, full in servers:
            print(f"{label}: starting", file=sys.stderr)
            server = Server(label, command, os.path.join(tmp, re.sub(r"\W+", "-", label).strip("-") + ".log"))
            try:
                server.wait_ready()
                models = PEER_MODELS.split(",") + (["classify"] if label.startswith("keel") else [])
                checked = attempt(label, "checks", lambda: smoke(server.url, models, reference))
                if checked:
                    notes.append(f"{label}: {checked}")
                url = server.url
                if can_bench:
                    if full:  # first: keel's overhead summary then holds identity's requests only
                        short = min(args.duration, 10)
                        record(label, "identity", 1, lambda: bench(keel, url, "identity", 1, short))
                        if label == KB and (label, "identity") in results:
                            results[(label, "identity")]["server_overhead_p50_us"] = attempt(
                                label, "overhead", lambda: overhead(server))
                    record(label, MIXED, 16, lambda: bench(keel, url, MIXED, 16, args.duration))
                    if label.startswith("keel"):
                        record(label, ALONE, 16, lambda: bench(keel, url, "resnet18", 16, args.duration))
                    if label == KB and (label, ALONE) in results:
                        sustainable = results[(label, ALONE)]["throughput_rps"]
                        record(label, OVERLOAD, 128,
                               lambda: overload(keel, server, sustainable, args.overload_duration))
                if full and have_wrk:
                    record(label, "identity wrk", 16, lambda: wrk(url, args.wrk_duration))
            finally:
                rc = server.stop()
                if rc not in (0, -signal.SIGTERM):
                    notes.append(f"{label}: exited with {rc} on SIGTERM")
    except BaseException:
        print(f"stopped; the repositories and server logs are in {tmp}", file=sys.stderr)
        raise

    report = (f"## keel serve vs Python peers\n\n{environment()}; {args.duration} s per level, closed loop.\n\n"
              + table(rows) + "\n\n" + ("" if args.peers_only else targets(results) + "\n\n")
              + "\n".join(f"- {n}" for n in notes) + "\n")
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    if args.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
