"""Sharded `rand`: N values of one generator as shards by offset, equal bit for bit to one
generator's output.

    doc = keel.dist.rand.generate(1 << 30, shards=16, executor=ex)             # digests only
    keel.dist.rand.generate(1 << 24, shards=8, out="normals.npy", executor=ex) # one file
    keel.dist.rand.generate(1 << 24, shards=8, out="shards/", executor=ex)     # shard-NNNNN.npy

Shard i is keel.rand.Generator(type, seed=seed, offset=offset + start_i) drawing count_i
values; because cuRAND's offset skips ahead exactly that many values for these generators, the
shards concatenated are Generator(type, seed=seed, offset=offset).<distribution>(N). Each task
returns its shard's sha256; the document's sha256 is of the whole stream (the shards' bytes in
order, computed from the shard digests' inputs, not by moving the data). With `out` the
workers write the values (they need the path, e.g. a shared filesystem).

What cannot be split (SPLITTABLE says which are): MTGP32 and MT19937 have no offset in cuRAND
(curandSetGeneratorOffset returns CURAND_STATUS_TYPE_ERROR: their state is a large table, and
cuRAND gives no skip-ahead for it); XORWOW's and MRG32k3a's normals and XORWOW's doubles take
cuRAND's offset in units other than the values they return (an offset of k skips 2k normals),
so their shards are refused rather than guessed at.
"""

import hashlib
import os

import numpy as np

import keel

from .tasks import Task, task_key

#: (generator, distribution, dtype) triples whose offset counts the values returned.
SPLITTABLE = {
    ("philox4_32_10", d, t) for d in ("normal", "uniform", "log_normal") for t in ("float32", "float64")
} | {
    (g, d, "float32") for g in ("sobol32", "scrambled_sobol32") for d in ("normal", "uniform")
} | {
    ("xorwow", "uniform", "float32"), ("mrg32k3a", "uniform", "float32"), ("mrg32k3a", "uniform", "float64"),
}

SCHEMA = "keel.dist.rand/1"
_FN = "keel.dist.rand:shard_task"


def why_not(generator, distribution="normal", dtype="float32"):
    """None when the stream can be split into shards by offset, else the one-line reason."""
    if (generator, distribution, dtype) in SPLITTABLE:
        return None
    if generator in ("mtgp32", "mt19937"):
        return (f"{generator} cannot be split into shards: cuRAND has no offset for it "
                "(curandSetGeneratorOffset: CURAND_STATUS_TYPE_ERROR)")
    if generator not in keel.rand.GENERATORS:
        return f"unknown generator {generator!r} (one of {', '.join(keel.rand.GENERATORS)})"
    return (f"{generator} {distribution} {dtype} cannot be split into shards: cuRAND's offset does not "
            "count these values one for one")


def plan(n, shards, align=4):
    """(start, count) of each shard: equal sizes, multiples of `align` but the last."""
    if n < 0 or shards < 1:
        raise keel.InvalidArgument(f"rand: need n >= 0 and shards >= 1, not n={n}, shards={shards}")
    step = -(-n // shards)
    step = -(-step // align) * align
    return [(s, min(step, n - s)) for s in range(0, n, step)] or [(0, 0)]


def tasks(n, generator="philox4_32_10", distribution="normal", dtype="float32", seed=0, offset=0,
          shards=16, out=None, mean=0.0, stddev=1.0):
    reason = why_not(generator, distribution, dtype)
    if reason:
        raise keel.InvalidArgument(reason)
    out_kind = None
    if out is not None:
        out = os.fspath(out)
        out_kind = "file" if out.endswith(".npy") else "dir"
        if out_kind == "file":
            np.lib.format.open_memmap(out, mode="w+", dtype=dtype, shape=(n,)).flush()
        else:
            os.makedirs(out, exist_ok=True)
    ts = []
    for i, (start, count) in enumerate(plan(n, shards)):
        kw = dict(generator=generator, distribution=distribution, dtype=dtype, seed=seed,
                  offset=offset + start, count=count, mean=mean, stddev=stddev)
        key = task_key(_FN, out=out, index=i, start=start, n=n, **kw)
        kw.update(out=out, out_kind=out_kind, index=i, start=start)
        ts.append(Task(key, _FN, kw, label=f"shard {i}"))
    return ts


def _draw(generator, distribution, dtype, seed, offset, count, mean, stddev, out=None):
    kw = {} if "sobol" in generator else {"seed": seed}
    g = keel.rand.Generator(generator, offset=offset, **kw)
    if distribution == "uniform":
        return g.uniform(count, dtype=dtype, out=out)
    return getattr(g, distribution)(count, mean=mean, stddev=stddev, dtype=dtype, out=out)


def shard_task(generator, distribution, dtype, seed, offset, count, mean, stddev, out, out_kind, index, start):
    """Draws one shard; writes it where `out` says; returns its sha256."""
    if out_kind == "file":
        m = np.lib.format.open_memmap(out, mode="r+")
        x = m[start:start + count]
        _draw(generator, distribution, dtype, seed, offset, count, mean, stddev, out=x)
        m.flush()
    else:
        x = _draw(generator, distribution, dtype, seed, offset, count, mean, stddev)
        if out_kind == "dir":
            np.save(os.path.join(out, f"shard-{index:05d}.npy"), x)
    return {"index": index, "start": start, "count": count,
            "sha256": hashlib.sha256(memoryview(np.ascontiguousarray(x)).cast("B")).hexdigest()}


def generate(n, generator="philox4_32_10", distribution="normal", dtype="float32", seed=0, offset=0,
             shards=16, out=None, mean=0.0, stddev=1.0, executor=None, progress=None):
    """Draws n values as `shards` tasks; the document lists each shard's range and sha256."""
    from .executors import SerialExecutor

    ts = tasks(n, generator, distribution, dtype, seed, offset, shards, out, mean, stddev)
    results = (executor or SerialExecutor()).run(ts, progress=progress)
    bad = [r for r in results if "error" in r]
    if bad:
        raise keel.InvalidArgument(bad[0]["error"])
    return {"schema": SCHEMA, "generator": generator, "distribution": distribution, "dtype": dtype,
            "seed": seed, "offset": offset, "n": n, "out": out, "shards": results}


def reference_digests(doc):
    """The shard digests of one generator drawing the whole stream piece by piece (as cuRAND
    does, two draws of n equal one of 2n): what generate()'s shards must equal."""
    kw = {} if "sobol" in doc["generator"] else {"seed": doc["seed"]}
    g = keel.rand.Generator(doc["generator"], offset=doc["offset"], **kw)
    out = []
    for s in doc["shards"]:
        if doc["distribution"] == "uniform":
            x = g.uniform(s["count"], dtype=doc["dtype"])
        else:
            x = getattr(g, doc["distribution"])(s["count"], dtype=doc["dtype"])
        out.append(hashlib.sha256(memoryview(x).cast("B")).hexdigest())
    return out
