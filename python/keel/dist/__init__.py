"""keel.dist — keel's jobs on a local process pool, a Dask cluster or Celery workers.

    import keel.dist
    with keel.dist.executor("dask://scheduler:8786") as ex:      # or "local", "local:4",
        doc = keel.dist.mem.advise("runs/", executor=ex)          # "celery://redis://h:6379/0"
    print(doc["fleet"]["best"]["settings"])

A job is split into idempotent tasks keyed by a hash of their inputs (file content, settings,
seed and offset); results are gathered in the order of the tasks, so every backend gives the
document a serial run gives. Jobs: keel.dist.mem.advise (snapshots x candidate settings),
keel.dist.kv.sweep (traces x policies x capacities), keel.dist.rand.generate (N numbers as
shards by offset). Workers need only `import keel` (Celery: celery -A keel.dist.celery_app
worker). See docs/cluster.md.
"""

from . import kv, mem, rand, verify  # noqa: F401
from .executors import (  # noqa: F401
    Cancelled,
    CeleryExecutor,
    ClusterError,
    DaskExecutor,
    Executor,
    JobTimeout,
    LocalExecutor,
    SerialExecutor,
    executor,
)
from .tasks import Task, task_key  # noqa: F401

__all__ = ["executor", "Executor", "SerialExecutor", "LocalExecutor", "DaskExecutor", "CeleryExecutor",
           "ClusterError", "JobTimeout", "Cancelled", "Task", "task_key", "mem", "kv", "rand", "verify"]
