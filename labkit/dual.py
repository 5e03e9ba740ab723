"""The worker of an app served both ways, by a WSGI server and an ASGI server (Django: one
project, its WSGI and ASGI handlers over the same views):

    LAB = Dual("django", sync_threads=None, database=...)
    start, stop = LAB.start, LAB.stop         # WSGI: gunicorn's hooks (labkit.gunicorn_hooks)
    asgi_app = labkit.asgi.Lifespan(app, LAB.serving)  # ASGI: the lifespan enters serving()
    LAB.worker                                # in a view: the resources of whichever serves
    LAB.info()                                # /info

Under WSGI the worker is labkit.threaded's (a request holds its thread to the end); under
ASGI labkit.eventloop's (async views on the worker's loop, `def` views where the framework
runs them: `sync_threads`, None for a thread each). In both, /executor's pool is
`worker.executor`, one of EXECUTOR_THREADS threads per worker that the framework's own
hand-off is given (Django: sync_to_async(..., executor=worker.executor)); the loop's default
executor stays the framework's. `database` opens the framework's own database pool (labkit.db.
open_sync(..., pool=...)), which both kinds of worker then use for /db and /db-blocking.

An async view's work must not depend on the worker's event loop, which only ASGI has: under
WSGI each async view runs on a loop made for its request (labkit.upstream.session_for)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from labkit import db, eventloop, knobs, threaded


class Dual:
    def __init__(
        self,
        framework: str,
        *,
        sync_threads: int | None,
        database: Callable[[], db.SyncPool] | None = None,
    ) -> None:
        self.framework = framework
        self.sync_threads = sync_threads  # ASGI: the pool `def` views run in (None: unbounded)
        self.database = database
        self._worker: threaded.Worker | eventloop.Worker | None = None

    @property
    def worker(self) -> Any:
        """This process's resources while it serves (threaded.Worker or eventloop.Worker)."""
        if self._worker is None:
            raise RuntimeError(f"the {self.framework} worker has not started")
        return self._worker

    def start(self, workers: int, threads: int | None, graceful_s: float | None) -> None:
        """WSGI: call it in each worker's main thread as it starts (gunicorn's hooks do)."""
        self._worker = threaded.start(
            self.framework,
            workers,
            threads,
            graceful_s,
            shared_executor=True,
            database=self.database,
        )

    def stop(self) -> None:
        if isinstance(self._worker, threaded.Worker):
            threaded.stop(self._worker)
        self._worker = None

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[eventloop.Worker]:
        """ASGI: the worker's resources from lifespan startup to shutdown (labkit.asgi.Lifespan)."""
        async with eventloop.serving(
            knobs.executor_threads(),
            self.sync_threads,
            framework=self.framework,
            default_executor=False,
            database=self.database,
        ) as worker:
            self._worker = worker
            try:
                yield worker
            finally:
                self._worker = None

    def info(self) -> dict[str, Any]:
        """/info of whichever worker serves."""
        worker = self.worker
        if isinstance(worker, threaded.Worker):
            return threaded.info(self.framework, worker)
        return eventloop.info(self.framework, worker)
