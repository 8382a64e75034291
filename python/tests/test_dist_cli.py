"""python3 -m keel's distributed commands: --cluster/--workers, exit codes, one-line errors."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import keel.dist

from conftest import TRACES

SMALL = ["cs336a2sm-tiny-backward.pickle", "eornn-cnn-counterfactuals.pickle"]


def py_keel(*args, env=None):
    e = dict(os.environ)
    e.pop("KEEL_CLUSTER", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "keel", *map(str, args)], capture_output=True, text=True,
                          env=e, timeout=300)


@pytest.fixture
def fleet(traces, tmp_path):
    for n in SMALL:
        shutil.copy(TRACES / n, tmp_path / n)
    return tmp_path


def test_routing():
    from keel.dist import cli

    assert cli.wants(["mem", "advise", "a.pickle", "--cluster", "serial"])
    assert cli.wants(["mem", "advise", "a.pickle", "b.pickle"])
    assert cli.wants(["rand", "normal", "--shards=4"])
    assert not cli.wants(["mem", "advise", "a.pickle", "--json"])
    assert not cli.wants(["rand", "normal", "--count", "4"])
    assert not cli.wants(["mem", "replay", "a.pickle", "--cluster", "x"])
    assert cli.wants(["comm", "verify", "-N", "2", "--cluster", "local"])
    assert cli.wants(["rand", "verify", "--workers=2"])
    assert not cli.wants(["comm", "verify", "-N", "2"]) and not cli.wants(["rand", "verify", "--shards", "2"])


def test_comm_verify_matrix_on_the_command_line():
    r = py_keel("comm", "verify", "-N", "1-2", "--transport", "shm,tcp", "--max-bytes", "4K", "--workers", "2",
                "--no-progress")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == [f"{n} ranks, {t}: 210 cases, 0 differ" for n, t in ((1, "none"), (2, "shm"), (2, "tcp"))]
    assert lines[-1] == "total: 630 cases, 0 differ, 0 could not run"
    bad = py_keel("comm", "verify", "-N", "0", "--workers", "2")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "outside [1, 256]" in bad.stderr


def test_json_equals_the_library_document(fleet):
    r = py_keel("mem", "advise", fleet, "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == keel.dist.mem.advise(str(fleet))
    lines = r.stderr.splitlines()  # not a terminal: plain lines, no bar
    assert "\r" not in r.stderr and lines[-1].startswith("keel: mem advise: 30/30 tasks done")


def test_cluster_from_the_environment(fleet):
    r = py_keel("mem", "advise", fleet / SMALL[0], "--no-progress", env={"KEEL_CLUSTER": "serial"})
    assert r.returncode == 0 and r.stderr == ""
    assert "max_split_size_mb:64" in r.stdout and r.stdout.rstrip().splitlines()[-1].startswith("fleet: ")


def test_a_malformed_input_exits_1_naming_it(fleet):
    (fleet / "bad.pickle").write_bytes(b"not a pickle")
    r = py_keel("mem", "advise", fleet, "--cluster", "serial", "--no-progress")
    assert r.returncode == 1
    assert r.stderr.startswith(f"keel: {fleet / 'bad.pickle'}: ParseError: ") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("args,message", [
    (["--cluster", "dask://127.0.0.1:9", "--connect-timeout", "2"], "keel: dask: cannot reach the scheduler"),
    (["--cluster", "celery://redis://127.0.0.1:9/0", "--connect-timeout", "2"], "keel: celery: cannot reach"),
    (["--cluster", "ftp://x"], "keel: bad cluster URL"),
    (["--workers", "0"], "keel: --workers must be at least 1"),
])
def test_bad_clusters_are_one_line_exit_2(fleet, args, message):
    r = py_keel("mem", "advise", fleet, *args)
    assert r.returncode == 2 and r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr


def test_rand_shards_refuses_mt19937_with_the_reason():
    r = py_keel("rand", "normal", "--generator", "mt19937", "--count", "64", "--shards", "2", "--cluster", "serial")
    assert r.returncode == 2 and "cuRAND has no offset" in r.stderr and r.stderr.count("\n") == 1


def test_rand_shards_into_one_file(tmp_path):
    import numpy as np

    out = tmp_path / "x.npy"
    r = py_keel("rand", "normal", "--count", "4096", "--shards", "3", "--seed", "5", "--out", out, "--workers", "2",
                "--no-progress")
    assert r.returncode == 0, r.stderr
    assert np.load(out).tobytes() == keel.rand.Generator("philox4_32_10", seed=5).normal(4096).tobytes()


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_is_a_bar_on_a_terminal():
    from keel.dist.progress import Progress

    out = _Tty()
    bar = Progress("mem advise", stream=out, width=10)
    bar(5, 10)
    bar(10, 10)
    bar.close()
    assert "\r" in out.text and "[#####.....] 5/10 tasks" in out.text and "[##########] 10/10 tasks" in out.text
    assert "ETA" in out.text and out.text.endswith("\n")


@pytest.mark.parametrize("url", ["serial", "local:2"])
def test_ctrl_c_cancels_and_says_how_many_finished(url):
    from keel.dist.tasks import Task

    ts = [Task(f"keel-sleep-cc-{i}", "keel.dist.tasks:sleep", {"seconds": 0.05, "value": i}) for i in range(40)]

    def progress(done, total):
        if done >= 3:
            raise KeyboardInterrupt

    with keel.dist.executor(url, timeout=120) as ex:
        with pytest.raises(keel.dist.Cancelled) as e:
            ex.run(ts, progress=progress)
    assert 3 <= e.value.done < 40 and e.value.total == 40
    assert str(e.value) == f"cancelled: {e.value.done} of 40 tasks had finished"
