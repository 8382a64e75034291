"""keel.mem — PyTorch CUDA memory snapshots and keel's caching allocator.

    snap = keel.mem.load_snapshot("run.pickle")     # or bytes, or torch.cuda.memory._snapshot()
    keel.mem.advise(snap).devices[0].verdict       # which PYTORCH_CUDA_ALLOC_CONF to use
    keel.mem.explain(snap)                         # where the memory was at the OOM

replay/advise/explain/compare return the same fields and numbers as `keel mem ... --json`
(keel.mem.Result: attribute access, .to_dict(), .to_pandas()). Snapshots are parsed, never
executed. Capacities are bytes or sizes such as "24GiB".
"""

import os

from ._keel import mem as _mem
from ._keel import parse_size
from ._result import Advice, DeviceResult, Result

Snapshot = _mem.Snapshot
CachingAllocator = _mem.CachingAllocator

__all__ = [
    "Snapshot",
    "load_snapshot",
    "replay",
    "advise",
    "explain",
    "compare",
    "report_html",
    "synth",
    "CachingAllocator",
    "Result",
]


def load_snapshot(x, name=None):
    """A Snapshot from a path, pickle bytes, or the dict (or segment list) that
    torch.cuda.memory._snapshot() returns; a Snapshot is returned as it is."""
    if isinstance(x, Snapshot):
        return x
    if isinstance(x, (str, os.PathLike)):
        return _mem.load_path(os.fspath(x))
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _mem.load_bytes(bytes(x), name or "<bytes>")
    if isinstance(x, (dict, list)):
        return _mem.load_object(x, name or "<snapshot dict>")
    raise TypeError(f"load_snapshot: expected a path, bytes or a snapshot dict, not {type(x).__name__}")


def _capacity(capacity):
    if capacity is None:
        return None
    if isinstance(capacity, str):
        return parse_size(capacity)
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity: expected bytes (int) or a size such as '24GiB', not {type(capacity).__name__}")
    if capacity <= 0:
        raise ValueError(f"capacity must be larger than 0, not {capacity}")
    return capacity


def replay(snap, settings=None, policy="pytorch", device=None, capacity=None, start="window",
           continue_after_oom=False, sites_by="site"):
    """Replays the snapshot on every device (or `device`) under `settings` (PYTORCH_CUDA_ALLOC_CONF
    syntax, on top of the recorded ones) and `policy` ("pytorch" or "keel"), from `start`
    ("window": the recorded layout, "fresh": the live blocks only). keel mem replay --json."""
    return DeviceResult(_mem.replay(load_snapshot(snap), settings, policy, device, _capacity(capacity), start,
                                    continue_after_oom, sites_by))


def advise(snap, capacity=None, device=None, threads=0):
    """Every candidate setting from the same start, the recommendation and its recipe, the OOM
    explanation: keel mem advise --json."""
    return Advice(_mem.advise(load_snapshot(snap), _capacity(capacity), device, threads))


def explain(snap, device=None, capacity=None, sites_by="site"):
    """Why each device's OOM happened (or would, under `capacity`): keel mem explain --json."""
    return DeviceResult(_mem.explain(load_snapshot(snap), device, _capacity(capacity), sites_by))


def compare(a, b, device=None, top=0):
    """What changed between two snapshots, by call site and segment: keel mem compare --json."""
    return Result(_mem.compare(load_snapshot(a), load_snapshot(b), device, top))


def report_html(snap, path, capacity=None, device=None):
    """Writes the self-contained HTML report of the snapshot and its analysis to `path`."""
    _mem.report_html(load_snapshot(snap), os.fspath(path), _capacity(capacity), device)


def synth(kind="train", seed=1, steps=6):
    """A realistic synthesized snapshot (keel mem synth): kind "train" or "infer"."""
    return _mem.synth(kind, seed, steps)
