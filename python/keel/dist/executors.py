"""Executors: one small interface, four backends.

    with keel.dist.executor("dask://10.0.0.5:8786") as ex:   # or celery://redis://HOST:PORT/DB,
        results = ex.run(tasks, progress=bar)              # local, local:N, serial

Executor.run(tasks, progress=None) runs keel.dist.tasks.Task objects and returns their
results in the order of `tasks`, whatever order they finished in (tasks with equal keys run
once). progress(done, total) is called as tasks finish. Ctrl-C (KeyboardInterrupt) cancels
the outstanding tasks and raises Cancelled, which says how many had finished.

Backends:
    serial        in this process, one after another (the reference every backend equals)
    local[:N]     N worker processes on this machine (default: the CPUs), no services
    dask://H:P    a Dask distributed scheduler; its workers need only `import keel`;
                  a task on a worker that died is re-run elsewhere by Dask's scheduler
    celery://redis://H:P/DB
                  Celery workers started with `celery -A keel.dist.celery_app worker`,
                  Redis as broker and result backend; acks_late, so a task whose worker
                  was killed goes back to the queue and runs again

Errors: an unreachable cluster or a bad URL raises ClusterError (a keel.Error and a
ConnectionError) within `connect_timeout` seconds; a job that does not finish within
`timeout` seconds raises JobTimeout (a keel.Error and a TimeoutError).
"""

import os
import time
from urllib.parse import urlparse

import keel

from . import tasks as _tasks

DEFAULT_CONNECT_TIMEOUT = 10.0


class ClusterError(keel.Error, ConnectionError):
    """The cluster cannot be reached, or its URL is not one keel.dist takes."""


class JobTimeout(keel.Error, TimeoutError):
    """The job did not finish within its timeout; the outstanding tasks were cancelled."""


class Cancelled(keel.Error):
    """Ctrl-C: the outstanding tasks were cancelled. .done of .total had finished."""

    def __init__(self, done, total):
        super().__init__(f"cancelled: {done} of {total} tasks had finished")
        self.done = done
        self.total = total


class Executor:
    """Runs tasks; results in task order. Use as a context manager, or call close()."""

    name = "executor"

    def __init__(self, timeout=None):
        self.timeout = timeout

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass

    def describe(self):
        return self.name

    def run(self, tasks, progress=None):
        tasks = list(tasks)
        unique = {}
        for t in tasks:
            unique.setdefault(t.key, t)
        order = list(unique.values())
        results = self._run(order, progress or (lambda done, total: None))
        by_key = dict(zip((t.key for t in order), results))
        return [by_key[t.key] for t in tasks]

    def _deadline(self):
        return None if self.timeout is None else time.monotonic() + self.timeout

    def _check(self, deadline, done, total):
        if deadline is not None and time.monotonic() > deadline:
            raise JobTimeout(f"{self.describe()}: the job did not finish within {self.timeout:g} s "
                             f"({done} of {total} tasks done)")

    def _run(self, tasks, progress):
        raise NotImplementedError


class SerialExecutor(Executor):
    """Every task in this process, in order."""

    name = "serial"

    def _run(self, tasks, progress):
        out = []
        try:
            for i, t in enumerate(tasks):
                out.append(_tasks.run(t.function, t.kwargs))
                progress(i + 1, len(tasks))
        except KeyboardInterrupt:
            raise Cancelled(len(out), len(tasks)) from None
        return out


class LocalExecutor(Executor):
    """A pool of `workers` processes on this machine (spawned: each imports keel afresh)."""

    name = "local"

    def __init__(self, workers=None, timeout=None):
        super().__init__(timeout)
        import concurrent.futures
        import multiprocessing

        self.workers = workers or os.cpu_count() or 1
        if self.workers < 1:
            raise keel.InvalidArgument(f"--workers must be at least 1, not {self.workers}")
        self._pool = concurrent.futures.ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"))

    def describe(self):
        return f"local ({self.workers} workers)"

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _abort(self, futures):
        """Cancels what has not started and ends the processes running the rest: a cancelled
        job does not wait for its running tasks. The next run() gets a fresh pool."""
        import concurrent.futures
        import multiprocessing

        for f in futures:
            f.cancel()
        for p in list(getattr(self._pool, "_processes", {}).values()):
            p.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = concurrent.futures.ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"))

    def _run(self, tasks, progress):
        import concurrent.futures

        futures = [self._pool.submit(_tasks.run, t.function, t.kwargs) for t in tasks]
        deadline = self._deadline()
        done = 0
        try:
            pending = set(futures)
            while pending:
                finished, pending = concurrent.futures.wait(
                    pending, timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED)
                done += len(finished)
                if finished:
                    progress(done, len(tasks))
                self._check(deadline, done, len(tasks))
            return [f.result() for f in futures]
        except concurrent.futures.process.BrokenProcessPool as e:
            self._abort(futures)
            raise keel.BackendError(f"local: a worker process died ({e}); {done} of {len(tasks)} "
                                    "tasks had finished") from None
        except KeyboardInterrupt:
            self._abort(futures)
            raise Cancelled(done, len(tasks)) from None
        except JobTimeout:
            self._abort(futures)
            raise


class DaskExecutor(Executor):
    """A Dask distributed scheduler at `address` ("HOST:PORT" or "tcp://HOST:PORT")."""

    name = "dask"

    def __init__(self, address, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None, retries=3):
        super().__init__(timeout)
        try:
            import distributed
        except ImportError:
            raise ClusterError("dask: the distributed package is not installed "
                               "(Debian: python3-distributed)") from None
        self.address = address if "://" in address else f"tcp://{address}"
        self.retries = retries
        try:
            self._client = distributed.Client(self.address, timeout=connect_timeout,
                                              set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise ClusterError(f"dask: cannot reach the scheduler at {self.address} within "
                               f"{connect_timeout:g} s ({type(e).__name__})") from None
        except ValueError as e:
            raise ClusterError(f"dask: bad scheduler address {address!r}: {e}") from None

    def describe(self):
        return f"dask ({self.address})"

    def close(self):
        try:
            self._client.close(timeout=5)
        except Exception:  # noqa: BLE001  (closing a client to a dead scheduler)
            pass

    def _run(self, tasks, progress):
        import distributed

        cancelled = getattr(distributed.client, "FutureCancelledError", distributed.client.CancelledError)
        futures = [self._client.submit(_tasks.run, t.function, t.kwargs, key=t.key, pure=False,
                                       retries=self.retries) for t in tasks]
        deadline = self._deadline()
        done = 0
        try:
            pending = set(futures)
            while pending:
                finished = {f for f in pending if f.done()}
                pending -= finished
                done += len(finished)
                if finished:
                    progress(done, len(tasks))
                else:
                    time.sleep(0.05)
                self._check(deadline, done, len(tasks))
            return self._client.gather(futures)
        except KeyboardInterrupt:
            self._client.cancel(futures)
            raise Cancelled(done, len(tasks)) from None
        except JobTimeout:
            self._client.cancel(futures)
            raise
        except cancelled as e:
            raise ClusterError(f"dask: a task was cancelled by the scheduler ({e})") from None


class CeleryExecutor(Executor):
    """Celery workers behind a Redis broker and result backend (`broker`: redis://H:P/DB)."""

    name = "celery"

    def __init__(self, broker, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None):
        super().__init__(timeout)
        try:
            from . import celery_app
        except ImportError:
            raise ClusterError("celery: the celery and redis packages are not installed "
                               "(Debian: python3-celery, python3-redis)") from None
        u = urlparse(broker)
        if u.scheme != "redis" or not u.hostname:
            raise ClusterError(f"celery: expected celery://redis://HOST:PORT/DB, not celery://{broker}")
        self.broker = broker
        import redis

        try:
            redis.Redis.from_url(broker, socket_connect_timeout=connect_timeout,
                                 socket_timeout=connect_timeout).ping()
        except (redis.exceptions.RedisError, OSError, ValueError) as e:
            raise ClusterError(f"celery: cannot reach the Redis broker at {broker} within "
                               f"{connect_timeout:g} s ({type(e).__name__})") from None
        self._app = celery_app.make_app(broker)
        replies = self._app.control.ping(timeout=min(connect_timeout, 2.0))
        deadline = time.monotonic() + connect_timeout
        while not replies and time.monotonic() < deadline:
            replies = self._app.control.ping(timeout=1.0)
        if not replies:
            raise ClusterError(f"celery: no worker answered on {broker} within {connect_timeout:g} s "
                               "(start one: celery -A keel.dist.celery_app worker)")
        self.workers = len(replies)

    def describe(self):
        return f"celery ({self.broker})"

    def close(self):
        self._app.close()

    def _run(self, tasks, progress):
        backend = self._app.backend
        keys = [backend.get_key_for_task(t.key) for t in tasks]
        backend.client.delete(*keys)  # a stale result under a key from an earlier run is not this run's
        for t in tasks:
            self._app.send_task("keel.dist.run", args=[t.function, t.kwargs], task_id=t.key)
        results = [None] * len(tasks)
        deadline = self._deadline()
        pending = list(range(len(tasks)))
        done = 0
        try:
            while pending:
                raw = backend.client.mget([keys[i] for i in pending])
                still = []
                for i, payload in zip(pending, raw):
                    meta = None if payload is None else backend.decode_result(payload)
                    if meta is None or meta["status"] not in ("SUCCESS", "FAILURE"):
                        still.append(i)
                    elif meta["status"] == "FAILURE":
                        raise keel.BackendError(f"celery: task {tasks[i].label or tasks[i].key} failed in "
                                                f"the worker: {meta['result']!r}")
                    else:
                        results[i] = meta["result"]
                if len(still) < len(pending):
                    done += len(pending) - len(still)
                    progress(done, len(tasks))
                else:
                    time.sleep(0.05)
                pending = still
                self._check(deadline, done, len(tasks))
            return results
        except (KeyboardInterrupt, JobTimeout) as e:
            self._app.control.revoke([tasks[i].key for i in pending])
            if isinstance(e, KeyboardInterrupt):
                raise Cancelled(done, len(tasks)) from None
            raise


def executor(url=None, workers=None, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None):
    """The executor a URL names: None/"local" (or "local:N"), "serial", "dask://HOST:PORT",
    "celery://redis://HOST:PORT/DB". None reads KEEL_CLUSTER, else the local backend with
    `workers` processes."""
    if url is None:
        url = os.environ.get("KEEL_CLUSTER") or "local"
    if url == "serial":
        return SerialExecutor(timeout=timeout)
    if url == "local" or url.startswith("local:"):
        n = workers
        if url.startswith("local:"):
            try:
                n = int(url[6:])
            except ValueError:
                raise ClusterError(f"bad cluster URL {url!r}: expected local:N") from None
        return LocalExecutor(n, timeout=timeout)
    if url.startswith("dask://"):
        return DaskExecutor(url[len("dask://"):], connect_timeout=connect_timeout, timeout=timeout)
    if url.startswith("celery://"):
        return CeleryExecutor(url[len("celery://"):], connect_timeout=connect_timeout, timeout=timeout)
    raise ClusterError(f"bad cluster URL {url!r}: expected local, local:N, serial, dask://HOST:PORT "
                       "or celery://redis://HOST:PORT/DB")
