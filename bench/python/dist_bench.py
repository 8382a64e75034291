"""keel.dist side by side: the same job serially, on local processes, on Dask and on Celery.

    PYTHONPATH=build/release/python python3 bench/python/dist_bench.py advise ../shared/traces/pytorch
    PYTHONPATH=build/release/python python3 bench/python/dist_bench.py overhead
    PYTHONPATH=build/release/python python3 bench/python/dist_bench.py faults ../shared/traces/pytorch [TRIALS]
    PYTHONPATH=build/release/python python3 bench/python/dist_bench.py rand [LOG2_N] [SHARDS]

advise: the fleet mem advise job (every snapshot x every candidate) on each backend, 2 workers
everywhere (local:2; a Dask scheduler with two 1-thread workers; one Celery worker with a
prefork pool of 2), the services started here on loopback and already connected; one warm-up
run, then the best of 3; every document compared byte for byte with the serial one. Dask and
Celery run it twice: in their default batches and task by task (batch=1). The line above the
table gives the machine's own ceiling: a CPU-bound loop in two processes against serially.
overhead: 400 empty tasks per backend, (wall time) / tasks, task by task and in default batches. faults: TRIALS (default 10) jobs per
backend, each with one worker process killed (SIGKILL) after a random number of finished
tasks (seeded): one of the Dask workers, a Celery pool process, and the Celery worker's main
process (a new worker started after the broker's visibility timeout, 5 s here, as a supervisor
would); a trial passes when the document equals the serial one; a job bounded at 300 s counts
as a hang. rand: 2^LOG2_N (default 30) Philox
normals as SHARDS (default 16) tasks on Dask against one process drawing the same stream piece
by piece; shard digests compared.
"""

import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))

import keel  # noqa: E402
import keel.dist  # noqa: E402
from keel.dist import rand as dist_rand  # noqa: E402
from keel.dist.tasks import Task  # noqa: E402

from _dist_services import CeleryCluster, DaskCluster  # noqa: E402


def dumps(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def best(f, repeats=3):
    out, times = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def services():
    return DaskCluster(workers=2), CeleryCluster(concurrency=2)


def _spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def ceiling(n=8_000_000, repeats=3):
    """What this machine gives two processes: a CPU-bound loop, twice serially against once in
    each of two processes (the upper bound of any 2-worker speed-up here)."""
    import multiprocessing

    serial, _ = best(lambda: [_spin(n), _spin(n)], repeats)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [10, 10])
        two, _ = best(lambda: pool.map(_spin, [n, n]), repeats)
    return serial / two


def advise(traces):
    n_tasks = len(keel.dist.mem.tasks(keel.dist.mem.expand(traces)))
    dask, celery = services()
    try:
        rows = []
        ref = None
        runs = [("serial", None), ("local:2", None), (dask.url, None), (dask.url, 1), (celery.url, None),
                (celery.url, 1)]
        for url, batch in runs:
            t0 = time.perf_counter()
            with keel.dist.executor(url, timeout=600, batch=batch) as ex:
                start = time.perf_counter() - t0
                keel.dist.mem.advise(traces, executor=ex)  # warm-up: workers started, imports done
                t, doc = best(lambda: keel.dist.mem.advise(traces, executor=ex))
                size = ex.batch_size(n_tasks)
            s = dumps(doc)
            ref = ref or s
            rows.append((url.split(":")[0], size, t, start, s == ref))
        serial = rows[0][2]
        print(f"fleet mem advise: {len(keel.dist.mem.expand(traces))} snapshots, {n_tasks} tasks; "
              f"this machine's ceiling for 2 processes (a CPU-bound loop): {ceiling():.2f}x")
        print("| backend | tasks per batch | job (s) | vs serial | executor start (s) | byte-identical |")
        print("|---|---:|---:|---:|---:|---|")
        for name, size, t, start, same in rows:
            print(f"| {name} | {size} | {t:.2f} | {serial / t:.2f}x | {start:.2f} | {same} |")
    finally:
        dask.stop()
        celery.stop()


def overhead(n=400):
    dask, celery = services()
    try:
        ts = [Task(f"keel-sleep-bench-{i}", "keel.dist.tasks:sleep", {"seconds": 0, "value": i}) for i in range(n)]
        print(f"per-task overhead: {n} empty tasks, best of 3")
        print("| backend | task by task (ms a task) | in default batches (ms a task) |")
        print("|---|---:|---:|")
        for url in ["serial", "local:2", dask.url, celery.url]:
            per = []
            for batch in (1, None):
                with keel.dist.executor(url, timeout=600, batch=batch) as ex:
                    ex.run(ts[:20])
                    t, out = best(lambda: ex.run(ts))
                    assert out == list(range(n))
                per.append(1000 * t / n)
            print(f"| {url.split(':')[0]} | {per[0]:.3f} | {per[1]:.3f} |")
    finally:
        dask.stop()
        celery.stop()


def faults(traces, trials=10):
    ref = dumps(keel.dist.mem.advise(traces))
    total = len(keel.dist.mem.tasks(keel.dist.mem.expand(traces)))
    rng = random.Random(18)
    dask, celery = services()
    try:
        for name, cluster in (("dask", dask), ("celery pool process", celery), ("celery main process", celery)):
            ok = hangs = 0
            times = []
            for trial in range(trials):
                at = rng.randrange(5, total - 20)
                killed = []

                def progress(done, _total):
                    if done >= at and not killed:
                        if name == "dask":
                            pid = cluster.alive_workers()[0].pid
                        elif name == "celery pool process":
                            pid = cluster.pool_children()[0]
                        else:
                            pid = cluster.worker.pid
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                        if name == "celery main process":
                            cluster.worker.wait(timeout=10)
                            time.sleep(cluster.visibility_timeout + 0.5)
                            cluster.start_worker()

                same = False
                t = time.perf_counter()
                try:
                    with keel.dist.executor(cluster.url, timeout=300) as ex:
                        same = dumps(keel.dist.mem.advise(traces, executor=ex, progress=progress)) == ref
                    ok += bool(same and killed)
                except keel.dist.JobTimeout:
                    hangs += 1
                times.append(time.perf_counter() - t)
                if name == "dask":
                    cluster.add_worker()
                    cluster.wait_for_workers(2)
                print(f"  {name} trial {trial + 1}: killed after {at} of {total} tasks, "
                      f"{times[-1]:.1f} s, identical: {same}", flush=True)
            print(f"| {name} | {trials} | {ok} | {hangs} | {sum(times) / len(times):.1f} |", flush=True)
    finally:
        dask.stop()
        celery.stop()


def rand(log2_n=30, shards=16):
    n = 1 << log2_n
    dask = DaskCluster(workers=2)
    try:
        with keel.dist.executor(dask.url, timeout=900) as ex:
            t = time.perf_counter()
            doc = dist_rand.generate(n, shards=shards, seed=42, executor=ex)
            t_dask = time.perf_counter() - t
        t = time.perf_counter()
        ref = dist_rand.reference_digests(doc)
        t_one = time.perf_counter() - t
        same = [s["sha256"] for s in doc["shards"]] == ref
        gb = n * 4 / 1e9
        print(f"2^{log2_n} philox4_32_10 normals (float32, {gb:.2f} GB), {shards} shards, each shard hashed")
        print("| run | time (s) | GB/s | shard digests equal |")
        print("|---|---:|---:|---|")
        print(f"| Dask, 2 workers | {t_dask:.2f} | {gb / t_dask:.2f} | {same} |")
        print(f"| one process, one stream | {t_one:.2f} | {gb / t_one:.2f} | (reference) |")
    finally:
        dask.stop()


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "advise":
        advise(sys.argv[2])
    elif what == "overhead":
        overhead()
    elif what == "faults":
        faults(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
    elif what == "rand":
        rand(*map(int, sys.argv[2:4]))
    else:
        sys.exit(f"unknown benchmark {what!r}: advise, overhead, faults or rand")
