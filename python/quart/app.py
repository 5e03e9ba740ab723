"""Quart target. Plain `def` views run in the event loop's default executor, `async def` views
on the event loop; Quart validates nothing, so lab.params checks the query against the
contract (400).

Quart wraps every non-coroutine view in quart.utils.run_sync, which awaits
`loop.run_in_executor(None, ...)`: the loop's default executor, the same one /executor uses.
So here THREADS and EXECUTOR_THREADS size one and the same pool, and /sync and /executor
share its threads."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from quart import Quart, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from lab import asgi, knobs, upstream
from lab.contract import load
from lab.params import BadParam, parse
from lab.work import fnv1a

CONTRACT = load()
View = TypeVar("View", bound=Callable[..., Any])

app = Quart(__name__, static_folder=None)
app.json.sort_keys = False  # type: ignore[attr-defined]  # keep fields in the order written


worker: asgi.Worker  # this worker process's resources, while it serves (below)


def executor_size() -> int:
    """THREADS or EXECUTOR_THREADS, which here name the same executor; if both are set they
    must agree, rather than one of them being silently ignored."""
    threads = knobs.threads()
    if threads is None:
        return knobs.executor_threads()
    if os.environ.get("EXECUTOR_THREADS", "").strip() and knobs.executor_threads() != threads:
        raise ValueError(
            f"Quart runs `def` views in the default executor: THREADS ({threads}) and "
            f"EXECUTOR_THREADS ({knobs.executor_threads()}) size the same pool and must agree"
        )
    return threads


@app.while_serving
async def serve() -> AsyncIterator[None]:
    # Quart runs this in every worker, after the server has started that process, on the
    # worker's own event loop.
    global worker
    async with asgi.serving(executor_size()) as worker:
        yield


@app.errorhandler(BadParam)
async def bad_param(exc: BadParam) -> tuple[dict[str, str], int]:
    return exc.body(), 400


@app.errorhandler(upstream.UpstreamError)
async def upstream_failed(exc: upstream.UpstreamError) -> tuple[dict[str, str], int]:
    return exc.body(), exc.status


@app.errorhandler(404)
@app.errorhandler(405)
async def http_error(exc: HTTPException) -> tuple[dict[str, str], int, dict[str, str]]:
    # Quart's own 404/405 are HTML; every target answers JSON (405 keeps its Allow).
    headers = {}
    if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
        headers["Allow"] = ", ".join(exc.valid_methods)
    return {"error": exc.name}, exc.code or 500, headers


def route(name: str) -> Callable[[View], View]:
    """Registers a GET view at the contract's path for endpoint `name`."""
    return app.get(CONTRACT[name].path, endpoint=name)


def params(name: str) -> dict[str, int]:
    """The endpoint's parameters, defaults filled in; BadParam becomes a 400 (above)."""
    return parse(CONTRACT[name], request.args)


def done(endpoint: str, **fields: Any) -> dict[str, Any]:
    return {"endpoint": endpoint, "pid": os.getpid(), **fields}


@route("hello")
async def hello() -> dict[str, Any]:
    return done("hello", message="hello, world")


@route("sync")
def sync() -> dict[str, Any]:
    # A plain def: run_sync runs it in the default executor, with the request context copied.
    p = params("sync")
    time.sleep(p["ms"] / 1000)
    return done("sync", **p)


@route("async")
async def async_() -> dict[str, Any]:
    p = params("async")
    await asyncio.sleep(p["ms"] / 1000)
    return done("async", **p)


@route("blocking")
async def blocking() -> dict[str, Any]:
    p = params("blocking")
    time.sleep(p["ms"] / 1000)  # the anti-pattern on purpose: it stops this worker's event loop
    return done("blocking", **p)


@route("executor")
async def executor() -> dict[str, Any]:
    p = params("executor")
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, p["ms"] / 1000)
    return done("executor", **p)


@route("gather")
async def gather() -> dict[str, Any]:
    p = params("gather")
    await asyncio.gather(*(asyncio.sleep(p["ms"] / 1000) for _ in range(p["n"])))
    return done("gather", **p)


@route("sequential")
async def sequential() -> dict[str, Any]:
    p = params("sequential")
    for _ in range(p["n"]):
        await asyncio.sleep(p["ms"] / 1000)
    return done("sequential", **p)


@route("cpu")
async def cpu() -> dict[str, Any]:
    n = params("cpu")["n"]
    return done("cpu", n=n, result=fnv1a(n))  # inline: holds the event loop while it runs


@route("cpu-pool")
async def cpu_pool() -> dict[str, Any]:
    n = params("cpu-pool")["n"]
    result = await asyncio.get_running_loop().run_in_executor(worker.pool, fnv1a, n)
    return done("cpu-pool", n=n, result=result)


@route("upstream")
async def upstream_() -> dict[str, Any]:
    p = params("upstream")
    statuses = await upstream.fan_out(worker.session, p["ms"], p["n"])
    return done("upstream", **p, statuses=statuses)


@route("upstream-seq")
async def upstream_seq() -> dict[str, Any]:
    p = params("upstream-seq")
    statuses = await upstream.one_by_one(worker.session, p["ms"], p["n"])
    return done("upstream-seq", **p, statuses=statuses)


@route("health")
async def health() -> dict[str, Any]:
    return done("health", status="ok")


@route("info")
async def info() -> dict[str, Any]:
    # `def` views run in the default executor, the one /executor uses.
    return asgi.info("quart", worker, worker.executor_threads)


assert set(app.view_functions) == set(CONTRACT.names()), "every contract endpoint needs a view"
