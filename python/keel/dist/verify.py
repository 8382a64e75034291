"""`rand verify` and `comm verify` as matrix jobs, each case one task running keel's own
command in the worker:

    doc = keel.dist.verify.rand_verify(executor=ex, full=True, random_seeds=[1, 2, 3])
    doc = keel.dist.verify.comm_verify(ranks="1-8", transports="shm,tcp", full=True, executor=ex)

rand verify: one task per generator (and random seed), `python3 -m keel rand verify
--generator G --json` (keel against libcurand's host generator, bit for bit; the worker needs
libcurand as the command does). comm verify: one task per (rank count, transport), `python3 -m
keel comm verify -N R --transport T --json` (every collective x algorithm x dtype against a
serial reference; the task's R ranks run on its worker's host).

Each document lists its cases' counts and failures in task order, and the totals; timings
and worker paths are left out, so it is the same on every backend. A case that could not run
(its command failed, or took longer than `timeout` seconds) is in "errors" with its one line.
"""

import json
import subprocess
import sys

import keel

from .tasks import Task, task_key

SCHEMA = "keel.dist.rand-verify/1"
COMM_SCHEMA = "keel.dist.comm-verify/1"
_FN = "keel.dist.verify:rand_verify_task"
_COMM_FN = "keel.dist.verify:comm_verify_task"
_DROP = ("seconds", "erfcinv_tables", "mtgp32_tables", "simd")  # timings, worker paths and CPUs
_TRANSPORTS = ("auto", "shm", "tcp")


def tasks(generators=None, length=None, random_seeds=(None,), full=False, timeout=3600):
    gens = list(keel.rand.GENERATORS if generators is None else
                (generators.split(",") if isinstance(generators, str) else generators))
    for g in gens:
        if g not in keel.rand.GENERATORS:
            raise keel.InvalidArgument(f"unknown generator {g!r} (one of {', '.join(keel.rand.GENERATORS)})")
    out = []
    for seed in random_seeds:
        for g in gens:
            kw = dict(generator=g, length=length, random_seed=seed, full=full)
            out.append(Task(task_key(_FN, **kw), _FN, dict(kw, timeout=timeout), label=f"rand verify {g}"))
    return out


def _keel_json(argv, what, timeout):
    """The JSON document `python3 -m keel ARGV --json` prints in this worker, or {"error"}."""
    try:
        r = subprocess.run([sys.executable, "-m", "keel", *argv, "--json"], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"TimeoutError: {what} took over {timeout} s"}
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        line = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        return {"error": f"{what}: {line}"}
    if not isinstance(doc, dict):
        return {"error": f"{what}: printed no JSON document"}
    for k in _DROP:
        doc.pop(k, None)
    return doc


def rand_verify_task(generator, length, random_seed, full, timeout):
    argv = ["rand", "verify", "--generator", generator]
    if length is not None:
        argv += ["--length", str(length)]
    if random_seed is not None:
        argv += ["--random-seed", str(random_seed)]
    if full:
        argv.append("--full")
    doc = _keel_json(argv, f"rand verify --generator {generator}", timeout)
    return doc if "error" in doc else dict(generator=generator, **doc)


def _matrix(ts, executor, progress):
    """(cases, errors) of a verify job's tasks, in task order."""
    from .executors import SerialExecutor

    results = (executor or SerialExecutor()).run(ts, progress=progress)
    errors = [{"case": t.label, "error": r["error"]} for t, r in zip(ts, results) if "error" in r]
    return [r for r in results if "error" not in r], errors


def rand_verify(generators=None, length=None, random_seeds=(None,), full=False, executor=None, progress=None):
    cases, errors = _matrix(tasks(generators, length, random_seeds, full), executor, progress)
    return {"schema": SCHEMA, "cases": cases, "errors": errors,
            "total_cases": sum(c["cases"] for c in cases),
            "failed_cases": sum(c["failed_cases"] for c in cases),
            "values": sum(c["values"] for c in cases)}


def _rank_counts(ranks):
    """[1, 2, 3, 4] from "1-4", "2,8" (keel comm verify -N's grammar), 4 or [2, 8]."""
    if isinstance(ranks, str):
        return keel.comm.parse_rank_list(ranks)
    return keel.comm.parse_rank_list(",".join(str(int(r)) for r in ([ranks] if isinstance(ranks, int) else ranks)))


def comm_tasks(ranks="1-4", transports="auto", full=False, max_bytes=None, timeout=3600):
    ts = transports.split(",") if isinstance(transports, str) else list(transports)
    for t in ts:
        if t not in _TRANSPORTS:
            raise keel.InvalidArgument(f"unknown transport {t!r} (one of {', '.join(_TRANSPORTS)})")
    out = []
    for n in _rank_counts(ranks):
        for t in ts if n > 1 else ts[:1]:  # one rank talks to no one: one case, whatever the transport
            kw = dict(ranks=n, transport=t, full=full, max_bytes=max_bytes)
            out.append(Task(task_key(_COMM_FN, **kw), _COMM_FN, dict(kw, timeout=timeout),
                            label=f"comm verify -N {n} --transport {t}"))
    return out


def comm_verify_task(ranks, transport, full, max_bytes, timeout):
    argv = ["comm", "verify", "-N", str(ranks), "--transport", transport]
    if full:
        argv.append("--full")
    if max_bytes is not None:
        argv += ["--max-bytes", str(max_bytes)]
    doc = _keel_json(argv, f"comm verify -N {ranks} --transport {transport}", timeout)
    return doc if "error" in doc else dict(requested_transport=transport, **doc)


def comm_verify(ranks="1-4", transports="auto", full=False, max_bytes=None, executor=None, progress=None,
                timeout=3600):
    cases, errors = _matrix(comm_tasks(ranks, transports, full, max_bytes, timeout), executor, progress)
    return {"schema": COMM_SCHEMA, "cases": cases, "errors": errors,
            "total_cases": sum(c["cases"] for c in cases),
            "failed_cases": sum(len(c["failed"]) for c in cases)}
