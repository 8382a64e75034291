"""Fleet `mem advise`: every snapshot x every candidate setting, one task each.

    doc = keel.dist.mem.advise(["runs/"], executor=ex)     # a directory, a glob, files
    doc["fleet"]["best"]["settings"]                      # one setting for the whole fleet

A task replays one snapshot under one candidate with keel.mem.replay (from the recorded
layout, the replay's own capacity), keyed by the file's sha256, the settings and the policy.
The candidates are keel mem advise's (src/memory/advisor.cpp: the recorded settings first,
then PyTorch settings on top of them, then keel's policy), less the garbage-collection ones,
which need a capacity. The document is built in input order from the tasks' results, so it is
the same, byte for byte as JSON, serially and on every backend.

Per file and device: each candidate's peak reserved and whether it ran out of memory, the best
PyTorch setting (the lowest peak that does not run out of memory; ties go to the earlier
candidate, the recorded settings first) and its saving against the recorded settings, and
keel's policy. A device whose recording cannot compare settings (keel mem advise's
`comparable: false`: a state without a trace, or no segment events) takes no part. Fleet: the
PyTorch setting that fits the most compared devices, then saves the most bytes in total.
"""

import glob
import os

import keel

from .tasks import Task, file_hash, task_key

#: (settings, policy): keel mem advise's candidates without a capacity. None: as recorded.
CANDIDATES = (
    (None, "pytorch"),
    ("max_split_size_mb:64", "pytorch"),
    ("max_split_size_mb:128", "pytorch"),
    ("max_split_size_mb:256", "pytorch"),
    ("max_split_size_mb:512", "pytorch"),
    ("max_split_size_mb:1024", "pytorch"),
    ("roundup_power2_divisions:2", "pytorch"),
    ("roundup_power2_divisions:4", "pytorch"),
    ("roundup_power2_divisions:8", "pytorch"),
    ("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "pytorch"),
    ("expandable_segments:True", "pytorch"),
    ("expandable_segments:True,roundup_power2_divisions:4", "pytorch"),
    ("max_split_size_mb:256,roundup_power2_divisions:4", "pytorch"),
    ("expandable_segments:False", "pytorch"),
    (None, "keel"),
)

SCHEMA = "keel.dist.mem-advise/1"
_FN = "keel.dist.mem:replay_task"


def expand(inputs):
    """Snapshot files from directories (their *.pickle files), globs and paths, sorted within
    each input, in input order, each once."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = []
    for x in inputs:
        x = os.fspath(x)
        if os.path.isdir(x):
            found = sorted(os.path.join(x, n) for n in os.listdir(x) if n.endswith(".pickle"))
        elif glob.has_magic(x):
            found = sorted(p for p in glob.glob(x) if os.path.isfile(p))
        else:
            if not os.path.isfile(x):
                raise keel.IOError(f"{x}: no such file or directory")
            found = [x]
        if not found:
            raise keel.InvalidArgument(f"{x}: no snapshots (*.pickle) there")
        out.extend(p for p in found if p not in out)
    return out


def tasks(files, capacity=None):
    """The job's tasks: file-major, candidates in CANDIDATES order."""
    out = []
    for path in files:
        digest = file_hash(path)
        for settings, policy in CANDIDATES:
            kw = dict(path=path, sha256=digest, settings=settings, policy=policy, capacity=capacity)
            out.append(Task(task_key(_FN, sha256=digest, settings=settings, policy=policy, capacity=capacity),
                            _FN, kw, label=path))
    return out


_cache = {}


def _snapshot(path, sha256):
    snap = _cache.get((path, sha256))
    if snap is None:
        if file_hash(path) != sha256:
            raise keel.InvalidArgument(f"{path}: the file changed after the job was planned")
        snap = keel.mem.load_snapshot(path)
        _cache.clear()  # one snapshot per worker process: tasks arrive file by file
        _cache[(path, sha256)] = snap
    return snap


def replay_task(path, sha256, settings, policy, capacity=None):
    """One (snapshot, candidate) replay, summarized per device."""
    r = keel.mem.replay(_snapshot(path, sha256), settings=settings, policy=policy, capacity=capacity)
    return [{
        "device": d["device"],
        "comparable": d["fidelity"] is not None,
        "peak_reserved": d["peak_reserved"],
        "peak_allocated": d["peak_allocated"],
        "oom": bool(d["ooms"]) or bool(d["stopped_at_oom"]),
    } for d in r.to_dict()["devices"]]


def _label(settings, policy):
    if policy == "keel":
        return "policy:keel" if settings is None else f"policy:keel,{settings}"
    return "recorded" if settings is None else settings


def summarize(files, results):
    """The fleet document from the tasks' results (in tasks() order)."""
    n = len(CANDIDATES)
    labels = [_label(s, p) for s, p in CANDIDATES]
    docs, errors = [], []
    for i, path in enumerate(files):
        rs = results[i * n:(i + 1) * n]
        bad = next((r for r in rs if isinstance(r, dict) and "error" in r), None)
        if bad is not None:
            errors.append({"file": path, "error": bad["error"]})
            continue
        devices = []
        for j, base in enumerate(rs[0]):
            cands = []
            for k, r in enumerate(rs):
                d = r[j]
                cands.append({"settings": labels[k], "policy": CANDIDATES[k][1],
                              "peak_reserved": d["peak_reserved"], "oom": d["oom"],
                              "saving": base["peak_reserved"] - d["peak_reserved"]})
            dev = {"device": base["device"], "comparable": base["comparable"],
                   "baseline_peak_reserved": base["peak_reserved"], "baseline_oom": base["oom"],
                   "best_pytorch": None, "keel": None, "candidates": cands}
            if base["comparable"]:
                fits = [c for c in cands if c["policy"] == "pytorch" and not c["oom"]]
                if fits:
                    best = min(fits, key=lambda c: c["peak_reserved"])  # min keeps the first of ties
                    dev["best_pytorch"] = _pick(best, base)
                k = next(c for c in cands if c["policy"] == "keel")
                dev["keel"] = None if k["oom"] else _pick(k, base)
            devices.append(dev)
        docs.append({"file": path, "devices": devices})
    return {"schema": SCHEMA, "candidates": labels, "files": docs, "errors": errors,
            "fleet": _fleet(docs, labels)}


def _pick(c, base):
    saving = c["saving"]
    return {"settings": c["settings"], "peak_reserved": c["peak_reserved"], "saving": saving,
            "saving_pct": round(100.0 * saving / base["peak_reserved"], 2) if base["peak_reserved"] else 0.0}


def _fleet(docs, labels):
    compared = [d for f in docs for d in f["devices"] if d["comparable"]]
    ranking = []
    for k, label in enumerate(labels):
        if CANDIDATES[k][1] != "pytorch":
            continue
        fit = [d for d in compared if not d["candidates"][k]["oom"]]
        ranking.append({"settings": label, "devices_fit": len(fit),
                        "devices_improved": sum(1 for d in fit if d["candidates"][k]["saving"] > 0),
                        "total_saving": sum(d["candidates"][k]["saving"] for d in fit)})
    order = sorted(range(len(ranking)), key=lambda i: (-ranking[i]["devices_fit"], -ranking[i]["total_saving"], i))
    ranking = [ranking[i] for i in order]
    return {"files": len(docs), "devices": sum(len(f["devices"]) for f in docs),
            "devices_compared": len(compared), "best": ranking[0] if compared else None,
            "ranking": ranking}


def advise(inputs, executor=None, capacity=None, progress=None):
    """The fleet document for snapshots (a directory, a glob, a path or a list of them) on
    `executor` (default: serial, in this process)."""
    from .executors import SerialExecutor

    files = expand(inputs)
    ts = tasks(files, capacity)
    ex = executor or SerialExecutor()
    return summarize(files, ex.run(ts, progress=progress))
