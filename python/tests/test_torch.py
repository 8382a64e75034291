"""keel.torch: the "keel" torch.distributed backend against Gloo, among real processes started by
`keel comm launch` (torch's env:// variables, loopback, a free MASTER_PORT per job, bounded by
--timeout and a subprocess timeout): every operation and dtype, async work objects, a killed
peer, a peer that never comes, and the DDP example (the same weights as under Gloo)."""

import pathlib

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

try:
    import keel.torch  # noqa: F401
except ImportError as e:  # built without libtorch-dev
    pytest.skip(f"keel.torch is not built: {e}", allow_module_level=True)

from conftest import SOURCE
from test_comm import launch, ok

HERE = pathlib.Path(__file__).resolve().parent
RANKS = HERE / "_torch_ranks.py"
EXAMPLE = SOURCE / "examples" / "ddp" / "train.py"


def test_registered_as_a_backend():
    assert "KEEL" in dist.Backend._plugins
    assert dist.Backend("keel") == "keel"
    assert issubclass(keel.torch.ProcessGroupKeel, dist.ProcessGroup)


def test_a_group_of_one_over_a_hash_store():
    pg = keel.torch.create_process_group(dist.HashStore(), 0, 1)
    assert isinstance(pg, dist.ProcessGroup) and pg.rank() == 0 and pg.size() == 1
    t = torch.arange(4, dtype=torch.float32)
    w = pg.allreduce([t])
    assert w.wait() and w.is_completed() and t.tolist() == [0, 1, 2, 3]
    assert pg.issued == 1 and pg.pending == 0


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_op_and_dtype_equals_gloo(keel_exe, ranks):
    r = ok(launch(keel_exe, ranks, "ops", script=RANKS, limit=400))
    assert r.stdout.count("ops OK") == ranks, r.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_killed_peer_is_a_peer_error_naming_it(keel_exe, ranks):
    r = launch(keel_exe, ranks, "killed", script=RANKS, limit=120)
    assert r.returncode == 137, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.count(f"blaming rank {ranks - 1}") == ranks - 1, r.stdout + r.stderr


def test_a_peer_that_never_comes_is_a_timeout_error(keel_exe):
    r = ok(launch(keel_exe, 2, "timeout", script=RANKS, limit=120))
    assert "TimeoutError after" in r.stdout, r.stdout


def test_ddp_example_ends_with_gloos_weights(keel_exe, tmp_path):
    runs = {}
    for backend in ("keel", "gloo"):
        runs[backend] = tmp_path / f"{backend}.pt"
        args = ["--backend", backend, "--steps", "60", "--out", str(runs[backend])]
        r = ok(launch(keel_exe, 2, args, script=EXAMPLE, limit=300))
        assert f"{backend} step 59" in r.stdout, r.stdout
    # 2 ranks: a sum of two gradients is the same in either order, so bit for bit
    r = ok(launch_one(EXAMPLE, "--compare", runs["keel"], runs["gloo"]))
    assert "bit for bit: True" in r.stdout, r.stdout
    a, b = torch.load(runs["keel"]), torch.load(runs["gloo"])
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def launch_one(script, *args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                          text=True, timeout=120)
