"""keel.dist: executors and the fleet `mem advise` job, serially, on local processes, on a
Dask scheduler with two workers and on Celery workers over redis-server (all started here on
127.0.0.1 with free ports and stopped afterwards); the documents must be byte-identical."""

import json
import os
import shutil
import signal
import threading

import pytest

import keel
import keel.dist
from keel.dist import tasks as dist_tasks

from conftest import TRACES

TIMEOUT = 300  # every job here: a bound, so that nothing hangs


def dumps(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


@pytest.fixture(scope="module")
def serial_doc(traces):
    return dumps(keel.dist.mem.advise(str(TRACES)))


@pytest.fixture
def small_fleet(traces, tmp_path):
    """Three small shared snapshots and one malformed pickle."""
    names = ["cs336a2sm-tiny-backward.pickle", "eornn-cnn-counterfactuals.pickle", "eqposteriors-oom-state.pickle"]
    for n in names:
        shutil.copy(TRACES / n, tmp_path / n)
    (tmp_path / "broken.pickle").write_bytes(b"\x80\x04this is not a snapshot")
    return tmp_path


def test_task_keys_are_stable_and_distinct():
    a = dist_tasks.task_key("keel.dist.mem:replay_task", sha256="ab", settings=None, policy="pytorch")
    assert a == dist_tasks.task_key("keel.dist.mem:replay_task", policy="pytorch", settings=None, sha256="ab")
    assert a != dist_tasks.task_key("keel.dist.mem:replay_task", sha256="ab", settings=None, policy="keel")
    assert a.startswith("keel-replay-task-")


def test_only_keel_functions_run():
    with pytest.raises(ValueError, match="not a keel task function"):
        dist_tasks.run("os:system", {"command": "true"})


def test_batches_keep_order_and_unbatch_to_the_tasks_results():
    ts = [dist_tasks.Task(f"keel-sleep-b{i}", "keel.dist.tasks:sleep", {"value": i}) for i in range(7)]
    units, sizes = dist_tasks.batches(ts, 3)
    assert sizes == [3, 3, 1] and units[2] is ts[6]
    assert [u.function for u in units[:2]] == [dist_tasks.BATCH] * 2
    assert units[0].key != units[1].key and units[0].key == dist_tasks.batches(ts, 3)[0][0].key
    results = [dist_tasks.run(u.function, u.kwargs) for u in units]
    assert dist_tasks.unbatch(sizes, results) == list(range(7))
    bad = dist_tasks.batches([ts[0], dist_tasks.Task("k", "os:system", {"command": "true"})], 2)[0]
    failed = dist_tasks.run(bad[0].function, bad[0].kwargs)
    assert dist_tasks.unbatch([2], [failed]) == [failed, failed] and "not a keel task function" in failed["error"]


def test_batched_runs_equal_task_by_task_and_count_tasks(small_fleet):
    with keel.dist.executor("local:2", timeout=TIMEOUT, batch=7) as ex:
        seen = []
        doc = keel.dist.mem.advise(str(small_fleet), executor=ex, progress=lambda d, t: seen.append((d, t)))
        assert ex.batch_size(60) == 7
    assert dumps(doc) == dumps(keel.dist.mem.advise(str(small_fleet)))
    n = 4 * len(keel.dist.mem.CANDIDATES)
    assert seen[-1] == (n, n) and all(t == n for _, t in seen)
    with pytest.raises(keel.InvalidArgument, match="at least 1"):
        keel.dist.executor("serial", batch=0)


def test_jobs_are_split_file_by_candidate(traces):
    files = keel.dist.mem.expand(str(TRACES))
    ts = keel.dist.mem.tasks(files)
    assert len(ts) == len(files) * len(keel.dist.mem.CANDIDATES) >= 100
    assert len({t.key for t in ts}) == len(ts)
    assert keel.dist.mem.expand(str(TRACES / "*.pickle")) == files


def test_best_setting_agrees_with_keel_mem_advise(traces):
    path = TRACES / "cs336a2sm-tiny-backward.pickle"
    doc = keel.dist.mem.advise([path])
    adv = keel.mem.advise(str(path), threads=1).to_dict()
    window = next(m for m in adv["devices"][0]["modes"] if m["mode"] == "window")
    best = window["candidates"][window["best_pytorch"]]
    mine = doc["files"][0]["devices"][0]["best_pytorch"]
    assert mine["settings"] == best["conf"]
    assert mine["peak_reserved"] == best["peak_reserved"] and mine["saving"] == best["saving"]
    assert doc["files"][0]["devices"][0]["keel"]["saving"] == window["candidates"][window["best_keel"]]["saving"]


def test_local_backend_is_byte_identical_to_serial(serial_doc):
    with keel.dist.executor("local", workers=2, timeout=TIMEOUT) as ex:
        seen = []
        doc = keel.dist.mem.advise(str(TRACES), executor=ex, progress=lambda d, t: seen.append((d, t)))
    assert dumps(doc) == serial_doc
    assert seen[-1][0] == seen[-1][1] == len(keel.dist.mem.tasks(keel.dist.mem.expand(str(TRACES))))


def test_a_malformed_pickle_is_reported_by_file_and_the_rest_complete(small_fleet):
    with keel.dist.executor("local:2", timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(small_fleet), executor=ex)
    assert [e["file"] for e in doc["errors"]] == [str(small_fleet / "broken.pickle")]
    err = doc["errors"][0]["error"]
    assert err.startswith("ParseError: ") and "\n" not in err
    assert [os.path.basename(f["file"]) for f in doc["files"]] == [
        "cs336a2sm-tiny-backward.pickle", "eornn-cnn-counterfactuals.pickle", "eqposteriors-oom-state.pickle"]
    assert doc["files"][0]["devices"][0]["best_pytorch"]["settings"] == "max_split_size_mb:64"


@pytest.mark.parametrize("url", ["nope://x", "local:x", "celery://amqp://h/0", "dask://[bad"])
def test_bad_urls_are_cluster_errors(url):
    with pytest.raises(keel.dist.ClusterError) as e:
        keel.dist.executor(url, connect_timeout=2)
    assert isinstance(e.value, keel.Error) and "\n" not in str(e.value)


@pytest.mark.parametrize("scheme", ["dask://127.0.0.1:{}", "celery://redis://127.0.0.1:{}/0"])
def test_an_unreachable_cluster_is_a_cluster_error_within_the_timeout(scheme):
    import time

    from _dist_services import free_port

    url = scheme.format(free_port())
    t = time.monotonic()
    with pytest.raises(keel.dist.ClusterError, match="cannot reach"):
        keel.dist.executor(url, connect_timeout=2)
    assert time.monotonic() - t < 15


def test_job_timeout_cancels_and_is_typed():
    ts = [dist_tasks.Task(f"keel-sleep-{i}", "keel.dist.tasks:sleep", {"seconds": 30}) for i in range(4)]
    import time

    t = time.monotonic()
    with keel.dist.executor("local:2", timeout=1) as ex:
        with pytest.raises(keel.dist.JobTimeout):
            ex.run(ts)
        assert ex.run(ts[:0] + [dist_tasks.Task("keel-after", "keel.dist.tasks:sleep", {"value": 1})]) == [1]
    assert time.monotonic() - t < 25  # the running tasks were ended, not waited for


# --- Dask: a scheduler and two workers on loopback -------------------------------------------

@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed", reason="python3-distributed is not installed")
    from _dist_services import DaskCluster

    c = DaskCluster(workers=2)
    try:
        yield c
    finally:
        c.stop()


def test_dask_is_byte_identical_to_serial(dask_cluster, serial_doc):
    with keel.dist.executor(dask_cluster.url, timeout=TIMEOUT) as ex:
        assert dumps(keel.dist.mem.advise(str(TRACES), executor=ex)) == serial_doc


def test_dask_task_errors_come_back_as_results(dask_cluster, small_fleet):
    with keel.dist.executor(dask_cluster.url, timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(small_fleet), executor=ex)
    assert [os.path.basename(e["file"]) for e in doc["errors"]] == ["broken.pickle"]
    assert len(doc["files"]) == 3


def test_dask_sends_short_tasks_in_batches(dask_cluster):
    with keel.dist.executor(dask_cluster.url, timeout=TIMEOUT) as ex:
        assert ex.batch_size(195) == 13 and ex.batch_size(16) == 1  # 8 batches per worker thread


def _interrupting(at):
    def progress(done, total):
        if done >= at:
            raise KeyboardInterrupt
    return progress


def _ctrl_c(url):
    ts = [dist_tasks.Task(f"keel-sleep-cc-{i}", "keel.dist.tasks:sleep", {"seconds": 0.05, "value": i})
          for i in range(40)]
    with keel.dist.executor(url, timeout=TIMEOUT, batch=1) as ex:
        with pytest.raises(keel.dist.Cancelled) as e:
            ex.run(ts, progress=_interrupting(3))
        assert 3 <= e.value.done < 40 and e.value.total == 40
        assert ex.run(ts[:2]) == [0, 1]  # the same tasks run again after a cancel


def test_dask_ctrl_c_cancels_the_outstanding_tasks(dask_cluster):
    _ctrl_c(dask_cluster.url)


def test_dask_worker_killed_mid_job_loses_nothing(dask_cluster, serial_doc):
    killed = []

    def progress(done, total):
        if done >= 20 and not killed:
            victim = dask_cluster.alive_workers()[0]
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim)

    with keel.dist.executor(dask_cluster.url, timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(TRACES), executor=ex, progress=progress)
    assert killed and killed[0].wait(timeout=10) == -signal.SIGKILL
    assert dumps(doc) == serial_doc
    dask_cluster.add_worker()  # back to two for whatever runs next
    dask_cluster.wait_for_workers(2)


# --- Celery: redis-server and a worker on loopback --------------------------------------------

@pytest.fixture(scope="module")
def celery_cluster():
    pytest.importorskip("celery", reason="python3-celery is not installed")
    pytest.importorskip("redis", reason="python3-redis is not installed")
    if not shutil.which("redis-server") and not os.path.exists("/usr/bin/redis-server"):
        pytest.skip("redis-server is not installed")
    from _dist_services import CeleryCluster

    c = CeleryCluster(concurrency=2)
    try:
        yield c
    finally:
        c.stop()


def test_celery_is_byte_identical_to_serial(celery_cluster, serial_doc):
    with keel.dist.executor(celery_cluster.url, timeout=TIMEOUT) as ex:
        assert ex.workers == 1
        assert dumps(keel.dist.mem.advise(str(TRACES), executor=ex)) == serial_doc


def test_celery_task_errors_come_back_as_results(celery_cluster, small_fleet):
    with keel.dist.executor(celery_cluster.url, timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(small_fleet), executor=ex)
    assert [os.path.basename(e["file"]) for e in doc["errors"]] == ["broken.pickle"]
    assert len(doc["files"]) == 3


def test_celery_worker_process_killed_mid_job_loses_nothing(celery_cluster, serial_doc):
    killed = []

    def progress(done, total):
        if done >= 20 and not killed:
            children = celery_cluster.pool_children()
            if children:
                os.kill(children[0], signal.SIGKILL)
                killed.append(children[0])

    with keel.dist.executor(celery_cluster.url, timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(TRACES), executor=ex, progress=progress)
    assert killed
    assert dumps(doc) == serial_doc


def test_celery_main_worker_process_killed_mid_job_loses_nothing(celery_cluster, serial_doc):
    import time

    killed = []

    def progress(done, total):
        if done >= 20 and not killed:
            worker = celery_cluster.worker
            os.kill(worker.pid, signal.SIGKILL)
            killed.append(worker)
            assert worker.wait(timeout=10) == -signal.SIGKILL
            time.sleep(celery_cluster.visibility_timeout + 0.5)  # its tasks go back to the queue
            celery_cluster.start_worker()  # as a supervisor would; it puts them back when it starts

    with keel.dist.executor(celery_cluster.url, timeout=TIMEOUT) as ex:
        doc = keel.dist.mem.advise(str(TRACES), executor=ex, progress=progress)
    assert killed
    assert dumps(doc) == serial_doc


def test_celery_ctrl_c_cancels_the_outstanding_tasks(celery_cluster):
    _ctrl_c(celery_cluster.url)


def test_dask_rand_shards_equal_one_stream(dask_cluster):
    from keel.dist import rand as dist_rand

    with keel.dist.executor(dask_cluster.url, timeout=TIMEOUT) as ex:
        doc = dist_rand.generate(1 << 22, shards=16, seed=42, executor=ex)
    assert [s["sha256"] for s in doc["shards"]] == dist_rand.reference_digests(doc)


def test_no_thread_is_left_behind():
    assert [t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()] == []
