"""keel.kv: the same documents as keel kv replay / sweep --json, traces, the block pool."""

import json
import math
import random

import pytest

import keel
from conftest import SOURCE, cli_error, cli_json

MOONCAKE = SOURCE.parent / "shared" / "traces" / "kvcache" / "mooncake-synthetic.jsonl"
TIMES = ("elapsed_ms", "load_ms")


def without_times(doc):
    if isinstance(doc, dict):
        return {k: without_times(v) for k, v in doc.items() if k not in TIMES}
    if isinstance(doc, list):
        return [without_times(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def mooncake():
    if not MOONCAKE.is_file():
        pytest.skip(f"the Mooncake trace is not at {MOONCAKE} (the shared data folder is absent)")
    return MOONCAKE


def write_trace(path, requests=300, block_size=16, seed=7):
    """Requests drawn from a few shared prefixes (system prompts, conversations), Mooncake's
    format: chained ids, one per block, the last block partial."""
    rng = random.Random(seed)
    next_id = [0]

    def fresh(n):
        ids = list(range(next_id[0], next_id[0] + n))
        next_id[0] += n
        return ids

    prefixes = [fresh(rng.randint(1, 12)) for _ in range(8)]
    lines = []
    t = 0
    for _ in range(requests):
        t += rng.randint(0, 40)
        shared = rng.choice(prefixes)[: rng.randint(1, 12)]
        ids = shared + fresh(rng.randint(0, 6))
        tokens = (len(ids) - 1) * block_size + rng.randint(1, block_size)
        lines.append(json.dumps({"timestamp": t, "input_length": tokens,
                                 "output_length": rng.randint(1, 50), "hash_ids": ids}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return write_trace(tmp_path_factory.mktemp("kv") / "small.jsonl")


@pytest.mark.parametrize("policy", keel.kv.POLICIES)
def test_replay_equals_the_cli_on_a_generated_trace(keel_exe, small, policy):
    for extra, kwargs in (([], {}),
                          (["--index", "radix", "--no-hit-cap"], {"index": "radix", "no_hit_cap": True}),
                          (["--hold", "--prefill-tps", "500", "--tpot-ms", "2"],
                           {"hold": True, "prefill_tps": 500, "tpot_ms": 2})):
        cli = cli_json(keel_exe, "kv", "replay", small, "--block-size", "16", "--capacity", "40blocks",
                       "--policy", policy, *extra)
        py = keel.kv.replay(small, capacity="40blocks", policy=policy, block_size=16, **kwargs)
        assert without_times(py.to_dict()) == without_times(cli), (policy, extra)
        assert list(py.to_dict()) == list(cli)  # the CLI's key order


def test_replay_equals_the_cli_on_the_mooncake_trace(keel_exe, mooncake):
    trace = keel.kv.load_trace(mooncake)
    for policy, capacity in (("lru", "3M"), ("keel", "10.24M"), ("belady", "3M"), ("lru", "inf")):
        cli = cli_json(keel_exe, "kv", "replay", mooncake, "--capacity", capacity, "--policy", policy)
        py = keel.kv.replay(trace, capacity=capacity, policy=policy)
        assert without_times(py.to_dict()) == without_times(cli), (policy, capacity)
    cli = cli_json(keel_exe, "kv", "replay", mooncake, "--capacity", "5859blocks", "--hold", "--policy",
                   "s3fifo")
    py = keel.kv.replay(str(mooncake), capacity=5859 * 512, hold=True, policy="s3fifo")
    assert without_times(py.to_dict()) == without_times(cli)
    assert py.capacity_blocks == 5859 and py.requests == 3993
    assert abs(keel.kv.replay(trace, capacity="3M").hit_rate_tokens - 0.316) < 0.005


def test_sweep_equals_the_cli(keel_exe, small, tmp_path):
    cli = cli_json(keel_exe, "kv", "sweep", small, "--block-size", "16", "--capacities", "20blocks,40blocks,1280",
                   "--policies", "lru,fifo,belady", "--no-svg")
    py = keel.kv.sweep(small, capacities=["20blocks", "40blocks", 1280], policies=["lru", "fifo", "belady"],
                       block_size=16)
    assert without_times(py.to_dict()) == without_times(cli)
    assert py.svg is None
    svg = tmp_path / "sweep.svg"
    with_chart = keel.kv.sweep(small, capacities="20blocks,40blocks", policies="lru,keel", block_size=16,
                               svg=svg)
    assert with_chart.svg == str(svg) and svg.read_text().startswith("<svg")
    cli = cli_json(keel_exe, "kv", "sweep", small, "--block-size", "16", "--capacities", "20blocks,40blocks",
                   "--policies", "lru,keel", "--svg", tmp_path / "cli.svg")
    assert without_times(with_chart.to_dict())["points"] == without_times(cli)["points"]


def test_sweep_equals_the_cli_on_the_mooncake_trace(keel_exe, mooncake):
    cli = cli_json(keel_exe, "kv", "sweep", mooncake, "--capacities", "1M,3M", "--policies", "lru,keel",
                   "--no-svg")
    py = keel.kv.sweep(keel.kv.load_trace(mooncake), capacities=["1M", "3M"], policies=["lru", "keel"])
    assert without_times(py.to_dict()) == without_times(cli)


def test_default_sweep_is_the_clis(keel_exe, small):
    cli = cli_json(keel_exe, "kv", "sweep", small, "--block-size", "16", "--no-svg")
    py = keel.kv.sweep(small, block_size=16)
    assert without_times(py.to_dict()) == without_times(cli)
    assert len(py.points) == 9 * len(keel.kv.POLICIES)


def test_a_trace_loads_once_and_replays_like_its_path(small):
    t = keel.kv.load_trace(small, block_size=16)
    assert len(t) == 300 and t.block_size == 16 and t.source == str(small) and t.load_ms >= 0
    first = t[0]
    assert set(first) == {"timestamp", "input_length", "output_length", "hash_ids"}
    assert len(first["hash_ids"]) == math.ceil(first["input_length"] / 16)
    assert t[-1] == t[len(t) - 1]
    with pytest.raises(IndexError):
        t[len(t)]
    a = keel.kv.replay(t, capacity="40blocks").to_dict()
    b = keel.kv.replay(small, capacity="40blocks", block_size=16).to_dict()
    assert without_times(a) == without_times(b)
    assert a["load_ms"] == t.load_ms
    with pytest.raises(keel.InvalidArgument, match="16-token blocks"):
        keel.kv.replay(t, block_size=512)
    assert "300 requests" in repr(t)


def test_raw_token_traces_are_hashed_by_keel(tmp_path, keel_exe):
    path = tmp_path / "tokens.jsonl"
    system = list(range(100, 164))
    path.write_text("".join(json.dumps({"timestamp": i, "tokens": system + [i] * (i % 20 + 1)}) + "\n"
                            for i in range(50)))
    py = keel.kv.replay(path, block_size=16)
    assert py.hit_rate_tokens > 0.5
    cli = cli_json(keel_exe, "kv", "replay", path, "--block-size", "16")
    assert without_times(py.to_dict()) == without_times(cli)


def test_capacities_as_the_cli_takes_them():
    assert keel.kv.parse_capacity("3M") == 5859
    assert keel.kv.parse_capacity("10240blocks") == 10240
    assert keel.kv.parse_capacity(3_000_000) == 5859
    assert keel.kv.parse_capacity("inf") is None
    assert keel.kv.parse_capacity(None) is None
    assert keel.kv.parse_capacity("1k", block_size=16) == 62


def test_results_read_as_attributes_and_rows(small):
    s = keel.kv.sweep(small, capacities=["20blocks", "40blocks"], policies=["lru", "belady"], block_size=16)
    assert s.points[0].policy == "lru" and s.points[0].capacity_tokens == 320
    assert s.block_size == 16 and s.mode == "instant"
    with pytest.raises(AttributeError):
        s.no_such_field
    pandas = pytest.importorskip("pandas")
    frame = s.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["policy"]) == ["lru", "lru", "belady", "belady"]
    assert (frame.groupby("capacity_blocks")["hit_rate_tokens"].max() <= s.infinite_hit_rate_tokens).all()


def test_bad_arguments_raise_the_clis_messages(keel_exe, small):
    for args, call in (
        (["--policy", "mru"], lambda: keel.kv.replay(small, policy="mru", block_size=16)),
        (["--capacity", "lots"], lambda: keel.kv.replay(small, capacity="lots", block_size=16)),
        (["--capacity=-1"], lambda: keel.kv.replay(small, capacity=-1, block_size=16)),
        (["--capacity", "3"], lambda: keel.kv.replay(small, capacity=3, block_size=16)),
        (["--tpot-ms", "nan"], lambda: keel.kv.replay(small, tpot_ms=math.nan, block_size=16)),
        (["--prefill-tps", "0"], lambda: keel.kv.replay(small, prefill_tps=0, block_size=16)),
        (["--block-size", "0"], lambda: keel.kv.replay(small, block_size=0)),
    ):
        block_size = [] if args[0] == "--block-size" else ["--block-size", "16"]
        message = cli_error(keel_exe, "kv", "replay", small, *block_size, *args)
        with pytest.raises(keel.InvalidArgument) as e:
            call()
        assert str(e.value) == message, args
    message = cli_error(keel_exe, "kv", "sweep", small, "--block-size", "16", "--capacities", "1M,inf")
    with pytest.raises(keel.InvalidArgument) as e:
        keel.kv.sweep(small, capacities=["1M", "inf"], block_size=16)
    assert str(e.value) == message
    with pytest.raises(ValueError, match="negative"):  # InvalidArgument is a ValueError
        keel.kv.replay(small, block_size=-16)
    with pytest.raises(keel.InvalidArgument, match="unknown prefix index"):
        keel.kv.replay(small, index="btree", block_size=16)
    with pytest.raises(keel.IOError):
        keel.kv.replay("/no/such/trace.jsonl")
    bad = small.with_name("bad.jsonl")
    bad.write_text('{"timestamp": 0, "input_length": 600, "hash_ids": [1, 2}\n')
    with pytest.raises(keel.ParseError, match="bad.jsonl:1:"):
        keel.kv.load_trace(bad)
    empty = small.with_name("empty.jsonl")
    empty.write_text("\n")
    with pytest.raises(keel.InvalidArgument, match="no requests"):
        keel.kv.load_trace(empty)


def test_wrong_types_raise_type_error(small):
    for call in (lambda: keel.kv.replay(3.5),
                 lambda: keel.kv.replay(small, capacity=object()),
                 lambda: keel.kv.replay(small, capacity=True),
                 lambda: keel.kv.replay(small, block_size=1.5),
                 lambda: keel.kv.replay(small, policy=7),
                 lambda: keel.kv.sweep(small, policies=[1, 2]),
                 lambda: keel.kv.load_trace(small, block_size="16"),
                 lambda: keel.kv.BlockPool("many"),
                 lambda: keel.kv.BlockPool(8).allocate(["a"], 4)):
        with pytest.raises(TypeError):
            call()


def test_the_block_pool_caches_prefixes():
    pool = keel.kv.BlockPool(16, block_size=4)
    tokens = list(range(12))
    hashes = keel.kv.hash_blocks(tokens, 4)
    assert len(hashes) == 3
    a = pool.allocate(hashes, 12)
    assert len(a) == 3 and a.num_tokens == 12
    pool.release(a)
    assert len(a) == 0  # released: empty
    assert pool.cached_blocks == 3 and pool.evictable_blocks == 3 and pool.free_blocks == 16
    other = keel.kv.hash_blocks(tokens[:8] + [99] * 4, 4)
    assert pool.lookup(other, 12) == 2
    b = pool.allocate(other, 12)
    stats = pool.stats()
    assert stats["hit_blocks"] == 2 and stats["hit_tokens"] == 8 and stats["query_tokens"] == 24
    assert stats["token_hit_rate"] == pytest.approx(8 / 24)
    assert pool.ref_count(b.blocks[0]) == 1 and pool.is_cached(b.blocks[0])
    assert pool.check_invariants() == ""
    pool.reset_stats()
    assert pool.stats()["requests"] == 0
    assert pool.policy == "lru" and pool.index == "hash" and pool.num_blocks == 16


def test_fork_and_copy_on_write():
    pool = keel.kv.BlockPool(8, block_size=4, policy="keel", index="radix")
    s = pool.allocate(keel.kv.hash_blocks(list(range(4)), 4), 6)  # one full block, one partial
    t = pool.fork(s)
    assert t.blocks == s.blocks and pool.ref_count(s.blocks[1]) == 2
    copies = pool.append_tokens(t, 1)  # writes into the shared partial block: copy first
    assert copies == [(s.blocks[1], t.blocks[1])]
    assert pool.stats()["cow_copies"] == 1
    pool.cache_blocks(t, keel.kv.hash_blocks(list(range(4)), 4))
    assert pool.append_tokens(t, 1 << 62) is None  # never fits: nothing changes
    assert pool.allocate([], 1 << 62) is None
    pool.release(t)
    pool.release(s)
    pool.release(s)  # a second release is a no-op
    assert pool.free_blocks == 8 and pool.check_invariants() == ""


def test_the_pool_refuses_what_would_corrupt_it():
    a, b = keel.kv.BlockPool(8), keel.kv.BlockPool(8)
    s = a.allocate([], 10)
    for call in (lambda: b.release(s), lambda: b.fork(s), lambda: b.append_tokens(s, 1),
                 lambda: b.cache_blocks(s, [])):
        with pytest.raises(keel.InvalidArgument, match="another BlockPool"):
            call()
    with pytest.raises(keel.InvalidArgument, match="negative"):
        a.allocate([], -1)
    with pytest.raises(keel.InvalidArgument):
        a.allocate([], 0)
    with pytest.raises(keel.InvalidArgument):
        a.allocate([1, 2, 3], 4)  # more hashes than blocks
    with pytest.raises(keel.InvalidArgument):
        a.cache_blocks(s, [1, 2, 3])
    with pytest.raises(IndexError):
        a.ref_count(8)
    with pytest.raises(IndexError):
        a.is_cached(-1)
    for args in ((0,), (-1,), (8, 0), (8, -4), (1 << 40,)):
        with pytest.raises(keel.InvalidArgument):
            keel.kv.BlockPool(*args)
    with pytest.raises(keel.InvalidArgument, match="unknown eviction policy"):
        keel.kv.BlockPool(8, policy="mru")
    with pytest.raises(keel.InvalidArgument, match="unknown prefix index"):
        keel.kv.BlockPool(8, index="btree")
    assert a.check_invariants() == ""


@pytest.mark.parametrize("policy", [p for p in keel.kv.POLICIES if p != "belady"])
def test_random_operations_keep_the_invariants(policy):
    rng = random.Random(policy)
    pool = keel.kv.BlockPool(32, block_size=4, policy=policy, index=rng.choice(["hash", "radix"]))
    prompts = [[rng.randrange(50) for _ in range(rng.randint(1, 40))] for _ in range(12)]
    live = []
    for _ in range(2000):
        op = rng.random()
        if op < 0.45:
            tokens = rng.choice(prompts)
            seq = pool.allocate(keel.kv.hash_blocks(tokens, 4), len(tokens))
            if seq is not None:
                live.append(seq)
        elif op < 0.75 and live:
            pool.release(live.pop(rng.randrange(len(live))))
        elif op < 0.85 and live:
            live.append(pool.fork(rng.choice(live)))
        elif live:
            pool.append_tokens(rng.choice(live), rng.randint(0, 9))
        assert pool.check_invariants() == ""
    for seq in live:
        pool.release(seq)
    assert pool.free_blocks == 32 and pool.check_invariants() == ""
