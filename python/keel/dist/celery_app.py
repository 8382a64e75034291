"""The Celery app keel's workers run:

    KEEL_CLUSTER=celery://redis://HOST:6379/0 celery -A keel.dist.celery_app worker

(KEEL_CELERY_BROKER=redis://HOST:6379/0 works too). Redis is broker and result backend.
Tasks are acknowledged late and rejected when their worker process is lost, so a killed
pool process's task goes back to the queue and runs again at once. When the worker's main
process dies (kill -9, a lost host), its unacknowledged tasks go back to the queue once they
have been out for the broker's visibility timeout: KEEL_CELERY_VISIBILITY_TIMEOUT seconds
(default 600), and a worker puts them back when it starts and every 100 s while it runs. A
task that runs longer than the timeout may be handed to a second worker too; tasks are
idempotent, so that costs time, not results. Tasks are short (milliseconds to seconds), so
each worker process prefetches 8: one at a time costs a broker round trip each. Messages and
results are JSON.
"""

import os

from celery import Celery


def broker_from_env():
    url = os.environ.get("KEEL_CELERY_BROKER")
    if url:
        return url
    cluster = os.environ.get("KEEL_CLUSTER", "")
    if cluster.startswith("celery://"):
        return cluster[len("celery://"):]
    return "redis://127.0.0.1:6379/0"


DEFAULT_VISIBILITY_TIMEOUT = 600


def visibility_timeout():
    raw = os.environ.get("KEEL_CELERY_VISIBILITY_TIMEOUT")
    if not raw:
        return DEFAULT_VISIBILITY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"KEEL_CELERY_VISIBILITY_TIMEOUT must be a positive number of seconds, not {raw!r}")
    return value


def make_app(broker):
    a = Celery("keel", broker=broker, backend=broker, set_as_current=False)
    a.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=8,
        broker_transport_options={"visibility_timeout": visibility_timeout()},
        result_expires=24 * 3600,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )

    @a.task(name="keel.dist.run")
    def run(function, kwargs):
        from keel.dist import tasks

        return tasks.run(function, kwargs)

    return a


app = make_app(broker_from_env())
