"""The thread-per-request worker model (WSGI: gunicorn sync/gthread, Flask's dev server): what
one worker process holds, made when it starts (gunicorn's post_worker_init, or around the dev
server's run) and released when it stops, and its /info.

    worker = start("flask", workers=..., threads=...)   # in the worker's main thread
    worker = start("django", ..., shared_executor=True, database=...)   # Django's own pool
    worker = start_granian("flask")                     # the same, from granian's options
    endpoints.upstream_sync(worker.client, worker.fan_out, ms, n, rid)
    db.sleep_sync(worker.db, ms, "db"), db.rows_sync(worker.db, n, seed)
    info(framework, worker)
    stop(worker)
    serve_dev(run, stop)                       # a dev server (Flask's app.run) instead
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from lab.contract import load
from labkit import db, knobs, pool, upstream
from labkit import info as infos
from labkit.work import release_blocked

FAN_OUT_THREADS = 100  # the contract's largest n: one /upstream call never queues for a thread


@dataclass(frozen=True)
class Worker:
    """What this worker process serves with, and how many requests it serves at once."""

    workers: int
    threads: int | None  # request threads per worker; None: a thread per request
    executor_threads: int
    pool_processes: int
    pool: ProcessPoolExecutor
    client: httpx.Client
    fan_out: ThreadPoolExecutor
    db: db.SyncPool  # psycopg_pool: /db, /db-blocking (the same here), /db-rows
    graceful_s: float | None = None  # the server's graceful timeout, when the app can see it
    # /executor's pool shared by the worker's request threads (Django's sync_to_async with an
    # executor); None: each request makes its own (Flask: its own event loop's default)
    executor: ThreadPoolExecutor | None = None


def start(
    framework: str,
    workers: int,
    threads: int | None,
    graceful_s: float | None = None,
    *,
    shared_executor: bool = False,
    database: Callable[[], db.SyncPool] | None = None,
) -> Worker:
    """This worker's resources. Call it from the worker's main thread (labkit.pool), which
    forks the pool's processes before the database pool starts its threads. `framework`
    names the database connections when LAB_TARGET does not. `shared_executor`: one pool of
    EXECUTOR_THREADS for the worker's /executor (worker.executor); `database` opens the
    framework's own database pool (labkit.db.open_sync(..., pool=...)) instead of the kit's."""
    processes = knobs.pool_processes()
    cpu_pool = pool.start(processes)
    executor_threads = knobs.executor_threads()
    return Worker(
        workers=workers,
        threads=threads,
        executor_threads=executor_threads,
        pool_processes=processes,
        pool=cpu_pool,
        client=upstream.open_client(),
        fan_out=ThreadPoolExecutor(FAN_OUT_THREADS, thread_name_prefix="fan-out"),
        db=database() if database else db.open_sync(framework),
        graceful_s=graceful_s,
        executor=ThreadPoolExecutor(executor_threads, thread_name_prefix="executor")
        if shared_executor
        else None,
    )


def start_granian(framework: str) -> Worker:
    """start() with the options of the granian server running this worker (labkit.granian): its
    workers, the Python threads a WSGI worker runs requests in, its kill timeout. Call it from
    granian's --factory target, which each worker calls in its main thread as it starts."""
    from labkit import granian

    served = granian.options()
    if served.interface != "wsgi":
        raise RuntimeError(
            f"a thread-per-request app runs on granian --interface wsgi, not {served.interface}"
        )
    return start(framework, served.workers, served.wsgi_threads, served.workers_kill_timeout)


def stop(worker: Worker, wait_for_pool: bool = True) -> None:
    """Release the worker's resources; wakes every request thread still blocked in a wait."""
    release_blocked()
    db.close_sync(worker.db)
    worker.fan_out.shutdown(wait=False, cancel_futures=True)
    if worker.executor is not None:
        worker.executor.shutdown(wait=False, cancel_futures=True)
    worker.client.close()
    if wait_for_pool:
        pool.stop(worker.pool)


def info(framework: str, worker: Worker, **base: Any) -> dict[str, Any]:
    """/info of a thread-per-request target. A request holds one request thread from start to
    end (an async view runs to completion inside it), so every endpoint serves workers x threads
    at once, or without bound when the server makes a thread per request; /cpu-pool is also
    bounded by the worker's pool processes, /executor by a shared executor's threads (E)
    where the worker has one, the database endpoints by its connections (D): a request holds
    its thread and a connection, so a thread per request serves D."""
    w, t, p, d = worker.workers, worker.threads, worker.pool_processes, worker.db.size
    e = worker.executor_threads
    slots = None if t is None else w * t
    capacity: dict[str, int | None] = {ep.name: slots for ep in load().bench_endpoints()}
    capacity["cpu-pool"] = w * min(t or p, p)
    if worker.executor is not None:  # one pool for the worker's requests: E at most
        capacity["executor"] = w * min(t or e, e)
    for name in ("db", "db-blocking", "db-rows"):  # /db-blocking is /db: no loop to block
        capacity[name] = w * (d if t is None else min(t, d))
    return {
        **infos.base(framework, graceful_s=worker.graceful_s, **base),
        "workers": w,
        "threads": t,
        "executor_threads": worker.executor_threads,
        "pool_processes": p,
        "database": db.info(worker.db),
        "capacity": infos.check_capacity(capacity),
    }


def serve_dev(run: Callable[[], None], stop: Callable[[], None], stop_s: float = 1.0) -> None:
    """Run a WSGI dev server (`run`, e.g. Flask's app.run) as tutorials do, ending on SIGTERM as
    on Ctrl-C. The dev server drops requests still in flight (a graceful timeout of 0). A
    running /cpu-pool task can take seconds: `stop` gets `stop_s`, then the pool's parent-death
    signal does the rest. Never returns: asgiref runs each async view's loop in a non-daemon
    thread, which Python would join at exit, so an in-flight /sequential could hold the exit."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request log lines

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # werkzeug's serve_forever ends on it

    signal.signal(signal.SIGTERM, interrupt)
    try:
        run()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stopping = threading.Thread(target=stop, daemon=True)
        stopping.start()
        stopping.join(stop_s)
    os._exit(0)
