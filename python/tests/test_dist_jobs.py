"""keel.dist's rand shards and kv sweep jobs, serially and on local processes."""

import json

import numpy as np
import pytest

import keel
import keel.dist
from keel.dist import kv as dist_kv
from keel.dist import rand as dist_rand

from conftest import SOURCE

KV_TRACE = SOURCE.parent / "shared" / "traces" / "kvcache" / "mooncake-synthetic.jsonl"


@pytest.fixture(scope="module")
def local():
    with keel.dist.executor("local:2", timeout=300) as ex:
        yield ex


def _single(generator, distribution, dtype, n, seed=7, offset=0):
    kw = {} if "sobol" in generator else {"seed": seed}
    g = keel.rand.Generator(generator, offset=offset, **kw)
    if distribution == "uniform":
        return g.uniform(n, dtype=dtype)
    return getattr(g, distribution)(n, dtype=dtype)


@pytest.mark.parametrize("generator,distribution,dtype", sorted(dist_rand.SPLITTABLE))
def test_shards_equal_one_stream_bit_for_bit(generator, distribution, dtype, tmp_path):
    n = 10_006
    out = tmp_path / "x.npy"
    doc = dist_rand.generate(n, generator, distribution, dtype, seed=7, offset=12, shards=5, out=out)
    assert len(doc["shards"]) == 5 and sum(s["count"] for s in doc["shards"]) == n
    whole = np.load(out)
    assert whole.tobytes() == _single(generator, distribution, dtype, n, offset=12).tobytes()
    assert [s["sha256"] for s in doc["shards"]] == dist_rand.reference_digests(doc)


def test_npy_shards_in_a_directory_concatenate_to_the_stream(tmp_path, local):
    doc = dist_rand.generate(1 << 16, shards=4, seed=3, out=tmp_path / "shards", executor=local)
    parts = [np.load(tmp_path / "shards" / f"shard-{i:05d}.npy") for i in range(4)]
    assert np.concatenate(parts).tobytes() == _single("philox4_32_10", "normal", "float32", 1 << 16, seed=3).tobytes()
    assert doc == dist_rand.generate(1 << 16, shards=4, seed=3, out=tmp_path / "shards")


@pytest.mark.parametrize("generator", ["mtgp32", "mt19937"])
def test_generators_without_an_offset_say_why(generator):
    assert "cuRAND has no offset" in dist_rand.why_not(generator)
    with pytest.raises(keel.InvalidArgument, match="cannot be split"):
        dist_rand.generate(1024, generator, shards=2)


def test_xorwow_normals_are_refused_not_guessed():
    with pytest.raises(keel.InvalidArgument, match="xorwow normal float32 cannot be split"):
        dist_rand.generate(1024, "xorwow", "normal", shards=2)


@pytest.fixture(scope="module")
def kv_trace():
    if not KV_TRACE.is_file():
        pytest.skip(f"shared KV trace not found at {KV_TRACE}")
    return KV_TRACE


def test_kv_sweep_is_the_same_serially_and_locally_and_agrees_with_keel_kv(kv_trace, local):
    kw = dict(capacities="1M,3M,10M", policies="lru,s3fifo,keel")
    serial = dist_kv.sweep([kv_trace], **kw)
    assert json.dumps(dist_kv.sweep([kv_trace], executor=local, **kw)) == json.dumps(serial)
    reference = keel.kv.sweep(str(kv_trace), **kw).to_dict()["points"]
    mine = serial["traces"][0]["points"]
    assert [(p["policy"], p["capacity_blocks"], p["hit_rate_tokens"], p["hit_rate_blocks"]) for p in mine] == [
        (p["policy"], p["capacity_blocks"], p["hit_rate_tokens"], p["hit_rate_blocks"]) for p in reference]


def test_kv_sweep_rejects_bad_options_before_any_task(kv_trace):
    with pytest.raises(keel.InvalidArgument, match="unknown policy"):
        dist_kv.sweep([kv_trace], policies="lru,nope")
    with pytest.raises(keel.InvalidArgument):
        dist_kv.sweep([kv_trace], capacities="lots")


def test_kv_sweep_reports_a_bad_trace_by_file(kv_trace, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": \n')
    doc = dist_kv.sweep([kv_trace, bad], capacities="1M", policies="lru")
    assert [e["file"] for e in doc["errors"]] == [str(bad)] and "\n" not in doc["errors"][0]["error"]
    assert len(doc["traces"]) == 1


def test_rand_verify_matrix_is_the_same_serially_and_locally(local):
    from keel.dist import verify

    kw = dict(generators="philox4_32_10,sobol32", length=600)
    serial = verify.rand_verify(**kw)
    if serial["errors"]:
        pytest.skip(f"rand verify cannot run here: {serial['errors'][0]['error']}")
    assert [c["generator"] for c in serial["cases"]] == ["philox4_32_10", "sobol32"]
    assert serial["failed_cases"] == 0 and serial["total_cases"] > 0
    assert json.dumps(verify.rand_verify(executor=local, **kw)) == json.dumps(serial)


def test_comm_verify_matrix_is_the_same_serially_and_locally(local):
    from keel.dist import verify

    kw = dict(ranks="1-3", transports="shm,tcp", max_bytes="64K")
    serial = verify.comm_verify(**kw)
    assert serial["errors"] == []
    assert [(c["ranks"], c["requested_transport"]) for c in serial["cases"]] == [
        (1, "shm"), (2, "shm"), (2, "tcp"), (3, "shm"), (3, "tcp")]
    assert [c["transport"] for c in serial["cases"]] == ["none", "shm", "tcp", "shm", "tcp"]
    assert serial["failed_cases"] == 0 and serial["total_cases"] > 5 * 100
    assert json.dumps(verify.comm_verify(executor=local, **kw)) == json.dumps(serial)


@pytest.mark.parametrize("kw, message", [(dict(ranks="0"), "outside \\[1, 256\\]"), (dict(ranks="2-x"), "rank list"),
                                         (dict(transports="udp"), "unknown transport")])
def test_comm_verify_rejects_bad_options_before_any_task(kw, message):
    from keel.dist import verify

    with pytest.raises(keel.InvalidArgument, match=message):
        verify.comm_tasks(**kw)
