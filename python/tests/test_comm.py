"""keel.comm: collectives on numpy arrays among real processes started by `keel comm launch`
(loopback, a free MASTER_PORT per job, every job bounded by --timeout and a subprocess
timeout), and the errors a caller sees: bad arrays, a closed communicator, a size mismatch,
a peer that never comes, a peer killed mid-allreduce."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import keel
from keel import comm

HERE = pathlib.Path(__file__).resolve().parent
RANKS = HERE / "_comm_ranks.py"


def launch(keel_exe, n, scenario, limit=120, script=RANKS, env=None):
    """Runs `keel comm launch -n N -- python3 SCRIPT SCENARIO` (SCENARIO: a word or a list of
    arguments); returns the CompletedProcess."""
    e = dict(os.environ)
    e.pop("KEEL_STORE_SECRET", None)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        e.pop(k, None)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(pathlib.Path(keel.__file__).parent.parent), e.get("PYTHONPATH")) if p)
    e.update(env or {})
    cmd = [keel_exe, "comm", "launch", "-n", str(n), "--timeout", str(limit), "--grace", "10", "--",
           sys.executable, str(script), *([scenario] if isinstance(scenario, str) else scenario)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 30, env=e)


def ok(r):
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    return r


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_every_dtype(keel_exe, ranks):
    r = ok(launch(keel_exe, ranks, "collectives", limit=240))
    assert r.stdout.count("collectives OK") == ranks, r.stdout


def test_every_collective_under_mpirun(tmp_path):
    """The same ranks started by Open MPI's mpirun: from_env reads OMPI_COMM_WORLD_*, the
    store is on MASTER_PORT, the secret is forwarded with -x."""
    import secrets
    import shutil
    import socket

    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.skip("mpirun (openmpi-bin) is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    e.update(MASTER_PORT=str(port), KEEL_STORE_SECRET=secrets.token_hex(16),
             PYTHONPATH=os.pathsep.join(p for p in (str(pathlib.Path(keel.__file__).parent.parent), e.get("PYTHONPATH")) if p))
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_PORT", "-x",
           "KEEL_STORE_SECRET", "-x", "PYTHONPATH", sys.executable, str(RANKS), "collectives"]
    r = ok(subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=e, cwd=tmp_path))
    assert r.stdout.count("collectives OK") == 2, r.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_bad_arrays_and_closed_communicators_raise_naming_the_rank(keel_exe, ranks):
    r = ok(launch(keel_exe, ranks, "errors"))
    assert r.stdout.count("errors OK") == ranks, r.stdout


def test_a_size_mismatch_raises_on_every_rank(keel_exe):
    r = ok(launch(keel_exe, 2, "mismatch"))
    assert r.stdout.count("mismatch raised") == 2, r.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_killed_peer_is_a_peer_error_naming_it(keel_exe, ranks):
    r = launch(keel_exe, ranks, "killed", limit=90)
    # the victim's SIGKILL is the job's exit code; every survivor blamed it and exited 0
    assert r.returncode == 137, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.count(f"blaming rank {ranks - 1}") == ranks - 1, r.stdout + r.stderr
    assert "rank exited with 0" not in r.stderr


def test_a_peer_that_never_comes_is_a_timeout_error(keel_exe):
    r = ok(launch(keel_exe, 2, "timeout"))
    assert "TimeoutError after" in r.stdout, r.stdout


def test_the_gil_is_released_during_a_collective(keel_exe):
    r = ok(launch(keel_exe, 2, "threads"))
    assert r.stdout.count("ticks during the barrier") == 2


def test_one_process_is_a_job_of_one(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
              "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(k, raising=False)
    assert comm.launch_env()["launcher"] == "single"
    with comm.Communicator.from_env() as c:
        assert (c.rank, c.size) == (0, 1)
        x = np.arange(5, dtype=np.float64)
        assert c.allreduce(x) is x and x.tolist() == [0, 1, 2, 3, 4]
        assert c.allgather(np.array([7], np.int32)).tolist() == [7]
        assert c.alltoall(np.array([1, 2], np.int64)).tolist() == [1, 2]
        assert c.reduce(x, root=0) is x
        with pytest.raises(keel.InvalidArgument, match="rank 0 of 1: broadcast: root 1"):
            c.broadcast(x, root=1)
    assert c.closed
    with pytest.raises(keel.InvalidArgument, match="closed"):
        c.allreduce(x)


def test_launch_env_reads_the_other_launchers(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    e = comm.launch_env()
    assert (e["launcher"], e["rank"], e["size"]) == ("openmpi", 2, 4)
    for k in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(k)
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("SLURM_NTASKS", "3")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[03-05]")
    e = comm.launch_env()
    assert (e["launcher"], e["rank"], e["size"], e["master_addr"]) == ("slurm", 1, 3, "gpu03")
    monkeypatch.setenv("SLURM_NTASKS", "x")
    with pytest.raises(keel.InvalidArgument, match="SLURM_NTASKS"):
        comm.launch_env()


def test_the_exception_classes():
    assert comm.TimeoutError is keel.CommTimeoutError
    assert issubclass(comm.TimeoutError, TimeoutError)
    assert issubclass(comm.PeerError, keel.CommError) and comm.PeerError is keel.PeerError
    assert issubclass(keel.CommError, keel.Error)
