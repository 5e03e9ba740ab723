"""Flask target. A WSGI app: every request holds one request thread from start to end, and
an `async def` view runs to completion inside it, on an event loop asgiref makes for that one
request. Bounds come from the contract through lab.params (400).

Per-worker resources (process pool, HTTP client, fan-out threads) are made when a worker
starts, never at import: gunicorn's hooks in gunicorn.conf.py call start()/stop(), and the
dev server (`python app.py`) calls them around app.run."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from flask import Flask, request
from werkzeug.exceptions import HTTPException

from lab import appinfo, knobs, params, pool, upstream
from lab.contract import load
from lab.work import fnv1a

CONTRACT = load()
FAN_OUT_THREADS = 100  # the contract's largest n: one /upstream call never queues for a thread
DEV_STOP_S = 1.0  # how long the dev server waits for its resources to stop on the way out


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


app = Flask(__name__)
app.json.sort_keys = False  # type: ignore[attr-defined]  # keep "endpoint", "pid" first


def start(workers: int, threads: int | None) -> None:
    """Make this worker's resources. Call it from the worker's main thread (lab.pool.start)."""
    processes = knobs.pool_processes()
    # The pool forks now, so its processes inherit this process's signal handlers. gunicorn's
    # worker SIGTERM handler only flags the worker to stop: a pool process that kept it would
    # outlive a killed worker despite its parent-death SIGTERM. Fork them with the default.
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        process_pool = pool.start(processes)
    finally:
        signal.signal(signal.SIGTERM, previous)
    app.extensions["lab"] = Worker(
        workers=workers,
        threads=threads,
        executor_threads=knobs.executor_threads(),
        pool_processes=processes,
        pool=process_pool,
        client=upstream.open_client(),
        fan_out=ThreadPoolExecutor(FAN_OUT_THREADS, thread_name_prefix="fan-out"),
    )


def stop() -> None:
    state: Worker | None = app.extensions.pop("lab", None)
    if state is None:
        return
    state.fan_out.shutdown(wait=False, cancel_futures=True)
    state.client.close()
    pool.stop(state.pool)


def worker() -> Worker:
    state: Worker | None = app.extensions.get("lab")
    if state is None:
        raise RuntimeError("worker not started: run under gunicorn -c gunicorn.conf.py")
    return state


@app.errorhandler(params.BadParam)
def bad_param(exc: params.BadParam) -> tuple[dict[str, str], int]:
    return exc.body(), 400


@app.errorhandler(upstream.UpstreamError)
def upstream_failed(exc: upstream.UpstreamError) -> tuple[dict[str, str], int]:
    return exc.body(), exc.status


@app.errorhandler(HTTPException)
def http_error(exc: HTTPException) -> tuple[dict[str, str], int]:
    # 404, 405 and the 500 Flask makes of an unhandled error: JSON, not Werkzeug's HTML page.
    return {"error": (exc.name or "error").lower()}, exc.code or 500


def args(name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.args)


def done(endpoint: str, **fields: Any) -> dict[str, Any]:
    return {"endpoint": endpoint, "pid": os.getpid(), **fields}


@app.get("/hello")
def hello() -> dict[str, Any]:
    return done("hello", message="hello, world")


@app.get("/sync")
def sync() -> dict[str, Any]:
    p = args("sync")
    time.sleep(p["ms"] / 1000)
    return done("sync", **p)


@app.get("/async")
async def async_() -> dict[str, Any]:
    p = args("async")
    await asyncio.sleep(p["ms"] / 1000)
    return done("async", **p)


@app.get("/blocking")
async def blocking() -> dict[str, Any]:
    p = args("blocking")
    # The anti-pattern, for comparison: here it stops only this request's own event loop,
    # which holds this request's thread anyway, so it costs no more than /sync.
    time.sleep(p["ms"] / 1000)
    return done("blocking", **p)


@app.get("/executor")
async def executor() -> dict[str, Any]:
    p = args("executor")
    loop = asyncio.get_running_loop()
    # Flask runs each async view on a new event loop of its own (asgiref's async_to_sync),
    # so the "default executor" is made for this one request and shut down after it. Give it
    # the EXECUTOR_THREADS size /info reports (by default asyncio's own rule anyway).
    loop.set_default_executor(ThreadPoolExecutor(worker().executor_threads))
    await loop.run_in_executor(None, time.sleep, p["ms"] / 1000)
    return done("executor", **p)


@app.get("/gather")
async def gather() -> dict[str, Any]:
    p = args("gather")
    await asyncio.gather(*(asyncio.sleep(p["ms"] / 1000) for _ in range(p["n"])))
    return done("gather", **p)


@app.get("/sequential")
async def sequential() -> dict[str, Any]:
    p = args("sequential")
    for _ in range(p["n"]):
        await asyncio.sleep(p["ms"] / 1000)
    return done("sequential", **p)


@app.get("/cpu")
def cpu() -> dict[str, Any]:
    p = args("cpu")
    return done("cpu", **p, result=fnv1a(p["n"]))  # inline: holds the GIL while it runs


@app.get("/cpu-pool")
def cpu_pool() -> dict[str, Any]:
    p = args("cpu-pool")
    return done("cpu-pool", **p, result=worker().pool.submit(fnv1a, p["n"]).result())


@app.get("/upstream")
def upstream_() -> dict[str, Any]:
    p, state = args("upstream"), worker()
    statuses = upstream.fan_out_sync(state.client, state.fan_out, p["ms"], p["n"])
    return done("upstream", **p, statuses=statuses)


@app.get("/upstream-seq")
def upstream_seq() -> dict[str, Any]:
    p = args("upstream-seq")
    statuses = upstream.one_by_one_sync(worker().client, p["ms"], p["n"])
    return done("upstream-seq", **p, statuses=statuses)


@app.get("/health")
def health() -> dict[str, Any]:
    return done("health", status="ok")


@app.get("/info")
def info() -> dict[str, Any]:
    state = worker()
    # Requests served at once: one per request thread. Async views do not add any, since
    # each runs to completion inside its request's thread. The dev server makes a thread per
    # request (no bound), and /cpu-pool is also bounded by the worker's pool processes.
    slots = None if state.threads is None else state.workers * state.threads
    pool_slots = state.workers * min(state.threads or state.pool_processes, state.pool_processes)
    capacity = {e.name: slots for e in CONTRACT.bench_endpoints()}
    capacity["cpu-pool"] = pool_slots
    return {
        **appinfo.base("flask", "flask"),
        "workers": state.workers,
        "threads": state.threads,
        "executor_threads": state.executor_threads,
        "pool_processes": state.pool_processes,
        "capacity": appinfo.check_capacity(capacity),
    }


def serve_dev() -> None:
    """Flask's threaded development server, as tutorials run it: one process."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request log lines
    start(workers=1, threads=None)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # werkzeug's serve_forever ends on it, as on Ctrl-C

    signal.signal(signal.SIGTERM, interrupt)
    try:
        host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))
        app.run(host, port, threaded=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # The dev server drops requests still in flight. An idle pool stops (and is reaped) at
        # once; a running /cpu-pool task can take seconds, so it is left to the pool's
        # parent-death signal instead of holding the exit.
        stopping = threading.Thread(target=stop, daemon=True)
        stopping.start()
        stopping.join(DEV_STOP_S)
    # asgiref runs each async view's loop in a non-daemon thread, which Python would join at
    # exit: an in-flight /sequential could hold the exit for minutes. Leave without it.
    os._exit(0)


if __name__ == "__main__":
    serve_dev()
