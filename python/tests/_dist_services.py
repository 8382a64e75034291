"""Real services on loopback for the keel.dist tests and benchmarks: a Dask scheduler with
workers, a redis-server with a Celery worker. Ports are chosen free; every process runs in
its own session and is stopped (SIGTERM, then SIGKILL) by stop(), even after a failure."""

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import keel

# Where the keel package in use lives: workers import the same one.
PACKAGE_ROOT = str(pathlib.Path(keel.__file__).resolve().parent.parent)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


class Services:
    """Processes started for one test module; stop() ends them all."""

    def __init__(self):
        self.procs = []
        self.logdir = tempfile.mkdtemp(prefix="keel-dist-")

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.logdir, f"{name}.log"), "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env or _env(), start_new_session=True)
        log.close()
        p.keel_name = name
        self.procs.append(p)
        return p

    def log(self, name):
        try:
            return pathlib.Path(self.logdir, f"{name}.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group: pool children too
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        shutil.rmtree(self.logdir, ignore_errors=True)


def _wait(what, ready, timeout, services, name):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start within {timeout} s:\n{services.log(name)}")


class DaskCluster(Services):
    """`dask scheduler` and `workers` `dask worker`s (no nanny: a killed worker stays dead)."""

    def __init__(self, workers=2, timeout=90):
        super().__init__()
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"dask://{self.address}"
        self.workers = []
        try:
            self.start("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                     "--port", str(self.port), "--no-dashboard", "--no-show"])
            for _ in range(workers):
                self.add_worker()
            self.wait_for_workers(workers, timeout)
        except BaseException:
            self.stop()
            raise

    def add_worker(self):
        i = len(self.workers)
        p = self.start(f"worker{i}", [sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://{self.address}",
                                      "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
                                      "--no-dashboard", "--name", f"w{i}"],
                       env=_env(OMP_NUM_THREADS="1"))
        self.workers.append(p)
        return p

    def wait_for_workers(self, n, timeout=90):
        import distributed

        deadline = time.monotonic() + timeout
        while True:
            try:
                with distributed.Client(f"tcp://{self.address}", timeout=5, set_as_default=False) as c:
                    c.wait_for_workers(n, timeout=max(1, deadline - time.monotonic()))
                    return
            except (OSError, TimeoutError, distributed.TimeoutError) as e:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"dask: {n} workers did not come within {timeout} s ({e}):\n"
                                       f"{self.log('scheduler')}") from None
                time.sleep(0.5)

    def alive_workers(self):
        return [p for p in self.workers if p.poll() is None]


class CeleryCluster(Services):
    """redis-server and one Celery worker (prefork pool of `concurrency` processes), the
    broker's visibility timeout `visibility_timeout` seconds (a dead worker's tasks come back
    that soon)."""

    def __init__(self, concurrency=2, timeout=90, visibility_timeout=5):
        super().__init__()
        redis_server = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(redis_server):
            raise FileNotFoundError("redis-server is not installed (Debian: redis-server)")
        self.port = free_port()
        self.broker = f"redis://127.0.0.1:{self.port}/0"
        self.url = f"celery://{self.broker}"
        self.concurrency = concurrency
        self.timeout = timeout
        self.visibility_timeout = visibility_timeout
        self.generation = 0
        try:
            self.start("redis", [redis_server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", self.logdir])
            import redis

            def pong():
                try:
                    return redis.Redis.from_url(self.broker, socket_connect_timeout=1).ping()
                except (redis.exceptions.RedisError, OSError):
                    return False

            _wait("redis-server", pong, timeout, self, "redis")
            self.start_worker()
        except BaseException:
            self.stop()
            raise

    def start_worker(self):
        """A (new) worker; returns once it answers a ping."""
        name = f"celery{self.generation}"
        self.generation += 1
        self.worker = self.start(name, [sys.executable, "-m", "celery", "-A", "keel.dist.celery_app", "worker",
                                        "--pool", "prefork", "--concurrency", str(self.concurrency),
                                        "--loglevel", "WARNING", "--hostname", f"keel-test-{name}@%h",
                                        "--without-gossip", "--without-mingle", "--without-heartbeat"],
                                 env=_env(KEEL_CELERY_BROKER=self.broker, OMP_NUM_THREADS="1",
                                          KEEL_CELERY_VISIBILITY_TIMEOUT=str(self.visibility_timeout)))
        from keel.dist import celery_app

        app = celery_app.make_app(self.broker)
        try:
            _wait("the celery worker", lambda: bool(app.control.ping(timeout=0.5)), self.timeout, self, name)
        finally:
            app.close()

    def pool_children(self):
        import psutil

        try:
            return [c.pid for c in psutil.Process(self.worker.pid).children()]
        except psutil.NoSuchProcess:
            return []
