"""Distributed `kv sweep`: traces x policies x capacities, one replay per task.

    doc = keel.dist.kv.sweep(["a.jsonl", "b.jsonl"], capacities="1M,3M", policies="lru,keel",
                             executor=ex)

Each task is keel.kv.replay of one trace under one (policy, capacity), keyed by the trace's
sha256 and the options. The document holds, per trace in input order, the points in the order
keel kv sweep gives them (policy-major, capacities as given) with the replay's hit rates and
evictions, less the timings, so it is the same on every backend. Workers read the traces by
path (a shared filesystem); each worker keeps the last trace it loaded.
"""

import os

import keel

from .tasks import Task, file_hash, task_key

SCHEMA = "keel.dist.kv-sweep/1"
_FN = "keel.dist.kv:replay_task"
DEFAULT_CAPACITIES = ("500k", "1M", "2M", "3M", "5M", "7.5M", "10.24M", "15M", "20M")  # keel kv sweep's
_TIMINGS = ("elapsed_ms", "load_ms")


def _names(v, default):
    if v is None:
        return list(default)
    if isinstance(v, str):
        return [x for x in v.split(",") if x]
    return [str(x) for x in v]


def tasks(traces, capacities=None, policies=None, block_size=512, index="hash", hold=False):
    if isinstance(traces, (str, os.PathLike)):
        traces = [traces]
    caps = _names(capacities, DEFAULT_CAPACITIES)
    pols = _names(policies, keel.kv.POLICIES)
    for p in pols:
        if p not in keel.kv.POLICIES:
            raise keel.InvalidArgument(f"unknown policy {p!r} (one of {', '.join(keel.kv.POLICIES)})")
    for c in caps:
        keel.kv.parse_capacity(c, block_size)  # a bad capacity fails here, with the CLI's message
    out = []
    for path in map(os.fspath, traces):
        digest = file_hash(path)
        for p in pols:
            for c in caps:
                kw = dict(path=path, sha256=digest, capacity=c, policy=p, block_size=block_size, index=index,
                          hold=hold)
                out.append(Task(task_key(_FN, **{k: v for k, v in kw.items() if k != "path"}), _FN, kw,
                                label=path))
    return out, caps, pols


_cache = {}


def replay_task(path, sha256, capacity, policy, block_size, index, hold):
    t = _cache.get((path, sha256, block_size))
    if t is None:
        if file_hash(path) != sha256:
            raise keel.InvalidArgument(f"{path}: the file changed after the job was planned")
        t = keel.kv.load_trace(path, block_size)
        _cache.clear()
        _cache[(path, sha256, block_size)] = t
    r = keel.kv.replay(t, capacity=capacity, policy=policy, index=index, hold=hold).to_dict()
    for k in _TIMINGS:
        r.pop(k, None)
    return r


def sweep(traces, capacities=None, policies=None, block_size=512, index="hash", hold=False, executor=None,
          progress=None):
    from .executors import SerialExecutor

    ts, caps, pols = tasks(traces, capacities, policies, block_size, index, hold)
    results = (executor or SerialExecutor()).run(ts, progress=progress)
    per = len(caps) * len(pols)
    docs, errors = [], []
    for i in range(0, len(ts), per):
        path = ts[i].kwargs["path"]
        rs = results[i:i + per]
        bad = next((r for r in rs if "error" in r), None)
        if bad:
            errors.append({"file": path, "error": bad["error"]})
            continue
        points = [{"requested": ts[i + j].kwargs["capacity"], **r} for j, r in enumerate(rs)]
        docs.append({"trace": path, "points": points})
    return {"schema": SCHEMA, "capacities": caps, "policies": pols, "traces": docs, "errors": errors}
