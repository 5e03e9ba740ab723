"""gunicorn hooks for every thread-per-request (WSGI) target: `--config
python:labkit.gunicorn_hooks` in its profiles. Without --preload the master never imports the
app; each worker loads it, then makes its own resources here, so nothing is shared across a
fork. The target's app module (`app`, in the target's folder) provides

    start(workers, threads, graceful_s)   # the worker's resources (labkit.threaded.start)
    stop()                                # and their release

The error names the target from LAB_TARGET."""

from __future__ import annotations

import os

from gunicorn.arbiter import Arbiter
from gunicorn.workers.base import Worker

SERVERS = ("sync", "gthread")  # the worker classes whose capacity labkit.threaded knows


def post_worker_init(worker: Worker) -> None:
    # In the worker's main thread, after the app is loaded: labkit.pool.start needs that thread.
    from app import start

    # worker_class_str, not the flag: gunicorn runs "sync" with --threads > 1 as gthread.
    worker_class = worker.cfg.worker_class_str
    if worker_class not in SERVERS:
        target = os.environ.get("LAB_TARGET", "this")
        raise RuntimeError(
            f"the {target} target runs sync or gthread workers, not {worker_class!r}"
        )
    threads = worker.cfg.threads if worker_class == "gthread" else 1
    start(worker.cfg.workers, threads, graceful_s=worker.cfg.graceful_timeout)


def worker_exit(server: Arbiter, worker: Worker) -> None:
    # gunicorn also calls this in the master when a worker is already gone: nothing to do there.
    if worker.pid != os.getpid():
        return
    from app import stop

    stop()
