"""Executors: one small interface, four backends.

    with keel.dist.executor("dask://10.0.0.5:8786") as ex:   # or celery://redis://HOST:PORT/DB,
        results = ex.run(tasks, progress=bar)              # local, local:N, serial

Executor.run(tasks, progress=None) runs keel.dist.tasks.Task objects and returns their
results in the order of `tasks`, whatever order they finished in (tasks with equal keys run
once). progress(done, total) is called as tasks finish. Ctrl-C (KeyboardInterrupt) cancels
the outstanding tasks and raises Cancelled, which says how many had finished.

Batches: Dask and Celery spend milliseconds of scheduler or broker round trips on every task,
as long as a short replay, and every worker process that sees a task of a file loads that
file, so a job of many tasks goes to the backends in batches of consecutive tasks (keel.dist.
tasks.batches): by default about BATCHES_PER_SLOT batches per worker thread or process, few
enough to pay the round trips and loads rarely, enough to keep every worker busy to the end
(`batch=N` sets the tasks per batch; 1 sends every task alone). A job with at most that many
tasks per slot (rand's shards) is sent task by task. Serial runs are not batched.

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
import secrets
import time
from urllib.parse import urlparse

import keel

from . import tasks as _tasks

DEFAULT_CONNECT_TIMEOUT = 10.0
BATCHES_PER_SLOT = 8


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


class _Tally:
    """Finished tasks counted from finished units (a batch counts as its tasks)."""

    def __init__(self, sizes, progress):
        self.sizes = sizes
        self.total = sum(sizes)
        self.done = 0
        self._progress = progress

    def finished(self, units):
        """Adds the units at these indices to the count and reports progress."""
        n = sum(self.sizes[i] for i in units)
        if n:
            self.done += n
            self._progress(self.done, self.total)

    def cancelled(self):
        return Cancelled(self.done, self.total)


class Executor:
    """Runs tasks; results in task order. Use as a context manager, or call close()."""

    name = "executor"

    def __init__(self, timeout=None, batch=None):
        self.timeout = timeout
        if batch is not None and batch < 1:
            raise keel.InvalidArgument(f"batch must be at least 1 task, not {batch}")
        self.batch = batch

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
        units, sizes = _tasks.batches(order, self.batch_size(len(order)))
        results = self._run(units, _Tally(sizes, progress or (lambda done, total: None)))
        by_key = dict(zip((t.key for t in order), _tasks.unbatch(sizes, results)))
        return [by_key[t.key] for t in tasks]

    def batch_size(self, n):
        """Tasks per unit sent to the backend for a job of n tasks."""
        if self.batch is not None:
            return self.batch
        slots = self._slots()
        return 1 if slots is None else max(1, -(-n // (BATCHES_PER_SLOT * slots)))

    def _slots(self):
        """Tasks the backend runs at once, for the default batch size; None: do not batch."""
        return None

    def _deadline(self):
        return None if self.timeout is None else time.monotonic() + self.timeout

    def _check(self, deadline, tally):
        if deadline is not None and time.monotonic() > deadline:
            raise JobTimeout(f"{self.describe()}: the job did not finish within {self.timeout:g} s "
                             f"({tally.done} of {tally.total} tasks done)")

    def _run(self, units, tally):
        raise NotImplementedError


class SerialExecutor(Executor):
    """Every task in this process, in order."""

    name = "serial"

    def _run(self, units, tally):
        out = []
        try:
            for i, t in enumerate(units):
                out.append(_tasks.run(t.function, t.kwargs))
                tally.finished([i])
        except KeyboardInterrupt:
            raise tally.cancelled() from None
        return out


class LocalExecutor(Executor):
    """A pool of `workers` processes on this machine (spawned: each imports keel afresh)."""

    name = "local"

    def __init__(self, workers=None, timeout=None, batch=None):
        super().__init__(timeout, batch)
        import concurrent.futures
        import multiprocessing

        self.workers = workers or os.cpu_count() or 1
        if self.workers < 1:
            raise keel.InvalidArgument(f"--workers must be at least 1, not {self.workers}")
        self._pool = concurrent.futures.ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"))

    def describe(self):
        return f"local ({self.workers} workers)"

    def _slots(self):
        return self.workers

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

    def _run(self, units, tally):
        import concurrent.futures

        futures = [self._pool.submit(_tasks.run, t.function, t.kwargs) for t in units]
        index = {f: i for i, f in enumerate(futures)}
        deadline = self._deadline()
        try:
            pending = set(futures)
            while pending:
                finished, pending = concurrent.futures.wait(
                    pending, timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED)
                tally.finished([index[f] for f in finished if f.exception() is None])
                self._check(deadline, tally)
            return [f.result() for f in futures]
        except concurrent.futures.process.BrokenProcessPool as e:
            self._abort(futures)
            raise keel.BackendError(f"local: a worker process died ({e}); {tally.done} of {tally.total} "
                                    "tasks had finished") from None
        except KeyboardInterrupt:
            self._abort(futures)
            raise tally.cancelled() from None
        except JobTimeout:
            self._abort(futures)
            raise


class DaskExecutor(Executor):
    """A Dask distributed scheduler at `address` ("HOST:PORT" or "tcp://HOST:PORT")."""

    name = "dask"

    def __init__(self, address, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None, retries=3,
                 batch=None):
        super().__init__(timeout, batch)
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

    def _slots(self):
        workers = self._client.scheduler_info().get("workers", {})
        return max(1, sum(w.get("nthreads", 1) for w in workers.values()))

    def _run(self, units, tally):
        import distributed

        cancelled = getattr(distributed.client, "FutureCancelledError", distributed.client.CancelledError)
        futures = [self._client.submit(_tasks.run, t.function, t.kwargs, key=t.key, pure=False,
                                       retries=self.retries) for t in units]
        deadline = self._deadline()
        try:
            pending = set(range(len(futures)))
            while pending:
                finished = [i for i in pending if futures[i].done()]
                pending.difference_update(finished)
                tally.finished(finished)
                if not finished:
                    time.sleep(0.05)
                self._check(deadline, tally)
            return self._client.gather(futures)
        except KeyboardInterrupt:
            raise tally.cancelled() from None
        except cancelled as e:
            raise ClusterError(f"dask: a task was cancelled by the scheduler ({e})") from None
        finally:
            # Outstanding tasks stop, finished results leave the workers' memory: the next run
            # computes again instead of finding a result that happens not to be released yet.
            try:
                self._client.cancel(futures)
            except Exception:  # noqa: BLE001  (a scheduler that is gone has nothing to release)
                pass


class CeleryExecutor(Executor):
    """Celery workers behind a Redis broker and result backend (`broker`: redis://H:P/DB)."""

    name = "celery"

    def __init__(self, broker, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None, batch=None):
        super().__init__(timeout, batch)
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
        try:
            self._app = celery_app.make_app(broker)
        except ValueError as e:
            raise ClusterError(f"celery: {e}") from None
        replies = self._app.control.ping(timeout=min(connect_timeout, 2.0))
        deadline = time.monotonic() + connect_timeout
        while not replies and time.monotonic() < deadline:
            replies = self._app.control.ping(timeout=1.0)
        if not replies:
            raise ClusterError(f"celery: no worker answered on {broker} within {connect_timeout:g} s "
                               "(start one: celery -A keel.dist.celery_app worker)")
        self.workers = len(replies)
        # limit: done once every worker that answered the ping has answered, not at the timeout.
        stats = self._app.control.inspect(timeout=min(connect_timeout, 2.0), limit=self.workers).stats() or {}
        self.processes = sum(s.get("pool", {}).get("max-concurrency", 1) for s in stats.values()) or self.workers

    def describe(self):
        return f"celery ({self.broker})"

    def close(self):
        self._app.close()

    def _slots(self):
        return self.processes

    def _run(self, tasks, tally):
        # Celery ids are the tasks' keys and this run's nonce: a revoked id stays revoked in
        # the workers, so a job cancelled and started again must not reuse it; a result is
        # read once and deleted.
        nonce = secrets.token_hex(4)
        ids = [f"{t.key}-{nonce}" for t in tasks]
        backend = self._app.backend
        keys = [backend.get_key_for_task(i) for i in ids]
        results = [None] * len(tasks)
        deadline = self._deadline()
        pending = list(range(len(tasks)))
        try:
            for t, task_id in zip(tasks, ids):
                self._app.send_task("keel.dist.run", args=[t.function, t.kwargs], task_id=task_id)
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
                    tally.finished(sorted(set(pending) - set(still)))
                else:
                    time.sleep(0.05)
                pending = still
                self._check(deadline, tally)
            return results
        except KeyboardInterrupt:
            raise tally.cancelled() from None
        finally:
            if pending:
                self._app.control.revoke([ids[i] for i in pending])
            backend.client.delete(*keys)


def executor(url=None, workers=None, connect_timeout=DEFAULT_CONNECT_TIMEOUT, timeout=None, batch=None):
    """The executor a URL names: None/"local" (or "local:N"), "serial", "dask://HOST:PORT",
    "celery://redis://HOST:PORT/DB". None reads KEEL_CLUSTER, else the local backend with
    `workers` processes. `batch`: tasks per unit sent (default: see Batches above)."""
    if url is None:
        url = os.environ.get("KEEL_CLUSTER") or "local"
    if url == "serial":
        return SerialExecutor(timeout=timeout, batch=batch)
    if url == "local" or url.startswith("local:"):
        n = workers
        if url.startswith("local:"):
            try:
                n = int(url[6:])
            except ValueError:
                raise ClusterError(f"bad cluster URL {url!r}: expected local:N") from None
        return LocalExecutor(n, timeout=timeout, batch=batch)
    if url.startswith("dask://"):
        return DaskExecutor(url[len("dask://"):], connect_timeout=connect_timeout, timeout=timeout,
                            batch=batch)
    if url.startswith("celery://"):
        return CeleryExecutor(url[len("celery://"):], connect_timeout=connect_timeout, timeout=timeout,
                              batch=batch)
    raise ClusterError(f"bad cluster URL {url!r}: expected local, local:N, serial, dask://HOST:PORT "
                       "or celery://redis://HOST:PORT/DB")
