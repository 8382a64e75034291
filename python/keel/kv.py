"""keel.kv — KV-cache block management: replay request traces, compare eviction policies.

    t = keel.kv.load_trace("mooncake.jsonl")               # Mooncake JSONL (or raw tokens)
    r = keel.kv.replay(t, capacity="3M", policy="lru")     # keel kv replay --json
    r.hit_rate_tokens, r.infinite_hit_rate_tokens
    s = keel.kv.sweep(t, capacities=["1M", "3M"], policies=["lru", "keel", "belady"])
    s.to_pandas()                                          # a row per (policy, capacity)

    pool = keel.kv.BlockPool(1024, block_size=16)          # keel::kv::block_pool itself
    seq = pool.allocate(keel.kv.hash_blocks(tokens, 16), len(tokens))

replay/sweep return the same fields and numbers as `keel kv replay|sweep --json`
(keel.kv.Result: attribute access, .to_dict(), .to_pandas()). Capacities are what the CLI
takes — "3M" (tokens, rounded down to whole blocks), "10240blocks", "inf" — or an int number of
tokens. The trace is a path or a Trace from load_trace (load once, replay many times). The GIL
is released while replaying.
"""

import os

from ._keel import kv as _kv
from ._result import Result

Trace = _kv.Trace
BlockPool = _kv.BlockPool
Sequence = _kv.Sequence
hash_blocks = _kv.hash_blocks
policy_names = _kv.policy_names
POLICIES = tuple(_kv.policy_names())

__all__ = [
    "Trace",
    "load_trace",
    "replay",
    "sweep",
    "parse_capacity",
    "policy_names",
    "POLICIES",
    "hash_blocks",
    "BlockPool",
    "Sequence",
    "ReplayResult",
    "SweepResult",
]


class ReplayResult(Result):
    """keel kv replay's document: one row."""

    __slots__ = ()


class SweepResult(Result):
    """keel kv sweep's document: a row per (policy, capacity) point."""

    __slots__ = ()

    def _rows(self):
        return [dict(p) for p in self._data["points"]]


def _capacity(capacity, what="capacity"):
    if capacity is None:
        return "inf"
    if isinstance(capacity, str):
        return capacity
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)):
        raise TypeError(
            f"{what}: expected tokens (int) or a capacity such as '3M' or '10240blocks', "
            f"not {type(capacity).__name__}"
        )
    if isinstance(capacity, float):
        return repr(capacity)  # 'nan', '-1.0', ...: the library's message names it
    return str(capacity)


def _trace(trace):
    if isinstance(trace, Trace):
        return trace
    if isinstance(trace, (str, os.PathLike)):
        return os.fspath(trace)
    raise TypeError(f"trace: expected a path or a keel.kv.Trace, not {type(trace).__name__}")


def _names(value, what):
    if value is None:
        return None
    if isinstance(value, str):
        return value.split(",")  # as --policies takes them
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{what}: expected a list of names, not {type(value).__name__}") from None
    for v in items:
        if not isinstance(v, str):
            raise TypeError(f"{what}: expected names (str), not {type(v).__name__}")
    return items


def load_trace(path, block_size=512):
    """Reads a JSONL request trace (Mooncake's format: timestamp, input_length,
    output_length, hash_ids; or raw "tokens"), cut into block_size-token blocks."""
    return _kv.load_trace(os.fspath(path), block_size)


def parse_capacity(capacity, block_size=512):
    """Blocks in a capacity as the CLI takes it ("3M", "10240blocks", tokens as an int);
    None for "inf"."""
    return _kv.parse_capacity(_capacity(capacity), block_size)


def replay(trace, capacity="inf", policy="lru", block_size=None, index="hash", hold=False,
           prefill_tps=10000.0, tpot_ms=30.0, no_hit_cap=False):
    """Replays the trace in timestamp order against one cache: keel kv replay --json.

    capacity: "inf", "3M", "10240blocks" or tokens; policy: one of POLICIES; index: "hash"
    (vLLM) or "radix" (SGLang); hold: keep each request's blocks for its modelled
    prefill + decode time (prefill_tps uncached tokens per second, tpot_ms per output token);
    no_hit_cap: count a hit on the whole prompt. block_size: tokens per block (default 512,
    or the Trace's own).
    """
    return ReplayResult(_kv.replay(_trace(trace), _capacity(capacity), policy, block_size, index, hold,
                                   prefill_tps, tpot_ms, no_hit_cap))


def sweep(trace, capacities=None, policies=None, block_size=None, index="hash", hold=False,
          prefill_tps=10000.0, tpot_ms=30.0, no_hit_cap=False, svg=None):
    """Hit rate vs. capacity for every policy: keel kv sweep --json.

    capacities: finite capacities (default the CLI's, 500k to 20M tokens); policies: names
    (default all of POLICIES); svg: a path to write the chart to (default: no chart, unlike the
    CLI, which writes kv-sweep.svg). Other arguments as replay().
    """
    caps = None if capacities is None else [_capacity(c, "capacities") for c in _list(capacities)]
    return SweepResult(_kv.sweep(_trace(trace), caps, _names(policies, "policies"), block_size, index, hold,
                                 prefill_tps, tpot_ms, no_hit_cap,
                                 None if svg is None else os.fspath(svg)))


def _list(value):
    if isinstance(value, str):
        return value.split(",")  # as --capacities takes them
    if isinstance(value, (int, float)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"capacities: expected a list of capacities, not {type(value).__name__}") from None
