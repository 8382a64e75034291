"""Tasks: what one unit of a job is, how it is keyed, and how a worker runs it.

A task is (key, function, kwargs): `function` names a module-level function as
"module:name" under keel.dist (so a worker needs only `import keel`), kwargs are plain JSON
values. The key is a hash of everything the result depends on (file content hashes,
settings, seed and offset): running a task twice gives the same result, so a backend may
re-run it after a worker died, and two equal tasks may share one result.

run() never raises for a task's own failure: a keel error on the task's input (a malformed
snapshot) comes back as {"error": "ParseError: file:line:col: ..."} so the job can report it
by input and finish the rest.

A batch is several tasks sent as one (batches()): a backend whose every task costs a
scheduler or broker round trip (Dask, Celery: milliseconds) sends short tasks a batch at a
time. A batch's key is a hash of its tasks' keys, its result the list of their results.
"""

import hashlib
import importlib
import json
from dataclasses import dataclass, field

_ALLOWED = ("keel.dist.mem", "keel.dist.kv", "keel.dist.rand", "keel.dist.verify", "keel.dist.tasks")


@dataclass(frozen=True)
class Task:
    key: str
    function: str
    kwargs: dict = field(default_factory=dict)
    label: str = ""  # what a progress line or an error names (a file, a shard)


def task_key(function, **parts):
    """A stable key: the function and a canonical JSON of what the result depends on."""
    blob = json.dumps([function, parts], sort_keys=True, separators=(",", ":"))
    name = function.rsplit(":", 1)[-1].replace("_", "-")
    return f"keel-{name}-{hashlib.sha256(blob.encode()).hexdigest()[:32]}"


def file_hash(path, _chunk=1 << 20):
    """sha256 of a file's content (the part of a task key that stands for the file)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(_chunk)
            if not b:
                return h.hexdigest()
            h.update(b)


def _resolve(function):
    module, _, name = function.partition(":")
    if module not in _ALLOWED or not name or name.startswith("_"):
        raise ValueError(f"keel.dist: not a keel task function: {function!r}")
    return getattr(importlib.import_module(module), name)


def run(function, kwargs):
    """Runs one task in this process: its result, or {"error": "Type: message"}."""
    import keel

    fn = _resolve(function)
    try:
        return fn(**kwargs)
    except (keel.Error, OSError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"}


BATCH = "keel.dist.tasks:batch"


def batch(tasks):
    """Several tasks, given as [function, kwargs] pairs, run in order: their results."""
    return [run(function, kwargs) for function, kwargs in tasks]


def batches(tasks, size):
    """`tasks` in order, `size` at a time, each group as one batch task (a group of one stays
    the task itself): (units, sizes), for unbatch()."""
    units, sizes = [], []
    for i in range(0, len(tasks), max(1, size)):
        group = tasks[i:i + max(1, size)]
        sizes.append(len(group))
        if len(group) == 1:
            units.append(group[0])
            continue
        units.append(Task(task_key(BATCH, keys=[t.key for t in group]), BATCH,
                          {"tasks": [[t.function, t.kwargs] for t in group]}, label=group[0].label))
    return units, sizes


def unbatch(sizes, results):
    """The tasks' results from their units' (batches() order). A batch that failed as a whole
    (it named a function that is not a task) gives its error to each of its tasks."""
    out = []
    for n, r in zip(sizes, results):
        out.extend(r if n > 1 and isinstance(r, list) else [r] * n)
    return out


def sleep(seconds=0.0, value=None):
    """A task that waits and returns `value` (tests and the overhead benchmark)."""
    import time

    time.sleep(seconds)
    return value


def fail(message="bad input"):
    """A task that fails on its input (tests)."""
    import keel

    raise keel.InvalidArgument(message)
