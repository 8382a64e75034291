"""Tasks: what one unit of a job is, how it is keyed, and how a worker runs it.

A task is (key, function, kwargs): `function` names a module-level function as
"module:name" under keel.dist (so a worker needs only `import keel`), kwargs are plain JSON
values. The key is a hash of everything the result depends on (file content hashes,
settings, seed and offset): running a task twice gives the same result, so a backend may
re-run it after a worker died, and two equal tasks may share one result.

run() never raises for a task's own failure: a keel error on the task's input (a malformed
snapshot) comes back as {"error": "ParseError: file:line:col: ..."} so the job can report it
by input and finish the rest.
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


def sleep(seconds=0.0, value=None):
    """A task that waits and returns `value` (tests and the overhead benchmark)."""
    import time

    time.sleep(seconds)
    return value


def fail(message="bad input"):
    """A task that fails on its input (tests)."""
    import keel

    raise keel.InvalidArgument(message)
