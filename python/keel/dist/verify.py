"""`rand verify` as a matrix job: one task per generator (and random seed), each running
`python3 -m keel rand verify --generator G --json` in the worker (keel against libcurand's
host generator, bit for bit; the worker needs libcurand as the command does).

    doc = keel.dist.verify.rand_verify(executor=ex, full=True, random_seeds=[1, 2, 3])

The document lists each (generator, seed) case's counts and failures in that order, and the
totals; the timings are left out, so it is the same on every backend.
"""

import json
import subprocess
import sys

import keel

from .tasks import Task, task_key

SCHEMA = "keel.dist.rand-verify/1"
_FN = "keel.dist.verify:rand_verify_task"
_DROP = ("seconds", "erfcinv_tables", "mtgp32_tables", "simd")  # timings, worker paths and CPUs


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


def rand_verify_task(generator, length, random_seed, full, timeout):
    argv = [sys.executable, "-m", "keel", "rand", "verify", "--generator", generator, "--json"]
    if length is not None:
        argv += ["--length", str(length)]
    if random_seed is not None:
        argv += ["--random-seed", str(random_seed)]
    if full:
        argv.append("--full")
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"TimeoutError: rand verify --generator {generator} took over {timeout} s"}
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        line = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        return {"error": f"rand verify --generator {generator}: {line}"}
    for k in _DROP:
        doc.pop(k, None)
    return dict(generator=generator, **doc)


def rand_verify(generators=None, length=None, random_seeds=(None,), full=False, executor=None, progress=None):
    from .executors import SerialExecutor

    ts = tasks(generators, length, random_seeds, full)
    results = (executor or SerialExecutor()).run(ts, progress=progress)
    errors = [{"case": t.label, "error": r["error"]} for t, r in zip(ts, results) if "error" in r]
    cases = [r for r in results if "error" not in r]
    return {"schema": SCHEMA, "cases": cases, "errors": errors,
            "total_cases": sum(c["cases"] for c in cases),
            "failed_cases": sum(c["failed_cases"] for c in cases),
            "values": sum(c["values"] for c in cases)}
