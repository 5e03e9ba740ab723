"""Starlette target. Plain `def` endpoints run in anyio's thread pool, `async def` endpoints on
the event loop; Starlette validates nothing, so lab.params checks the query against the
contract (400)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lab import asgi, knobs, upstream
from lab.contract import load
from lab.params import BadParam, parse
from lab.work import fnv1a

CONTRACT = load()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    asgi.size_anyio_pool()
    async with asgi.serving(knobs.executor_threads()) as worker:
        app.state.worker = worker
        yield


def params(request: Request, name: str) -> dict[str, int]:
    """The endpoint's parameters, defaults filled in; BadParam becomes a 400 (see below)."""
    return parse(CONTRACT[name], request.query_params)


def done(endpoint: str, **fields: Any) -> JSONResponse:
    return JSONResponse({"endpoint": endpoint, "pid": os.getpid(), **fields})


async def hello(request: Request) -> JSONResponse:
    return done("hello", message="hello, world")


def sync(request: Request) -> JSONResponse:
    # A plain def: Starlette runs it with anyio.to_thread.run_sync, so in anyio's thread pool.
    p = params(request, "sync")
    time.sleep(p["ms"] / 1000)
    return done("sync", **p)


async def async_(request: Request) -> JSONResponse:
    p = params(request, "async")
    await asyncio.sleep(p["ms"] / 1000)
    return done("async", **p)


async def blocking(request: Request) -> JSONResponse:
    p = params(request, "blocking")
    time.sleep(p["ms"] / 1000)  # the anti-pattern on purpose: it stops this worker's event loop
    return done("blocking", **p)


async def executor(request: Request) -> JSONResponse:
    p = params(request, "executor")
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, p["ms"] / 1000)
    return done("executor", **p)


async def gather(request: Request) -> JSONResponse:
    p = params(request, "gather")
    await asyncio.gather(*(asyncio.sleep(p["ms"] / 1000) for _ in range(p["n"])))
    return done("gather", **p)


async def sequential(request: Request) -> JSONResponse:
    p = params(request, "sequential")
    for _ in range(p["n"]):
        await asyncio.sleep(p["ms"] / 1000)
    return done("sequential", **p)


async def cpu(request: Request) -> JSONResponse:
    n = params(request, "cpu")["n"]
    return done("cpu", n=n, result=fnv1a(n))  # inline: holds the event loop while it runs


async def cpu_pool(request: Request) -> JSONResponse:
    n = params(request, "cpu-pool")["n"]
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(request.app.state.worker.pool, fnv1a, n)
    return done("cpu-pool", n=n, result=result)


async def upstream_(request: Request) -> JSONResponse:
    p = params(request, "upstream")
    statuses = await upstream.fan_out(request.app.state.worker.session, p["ms"], p["n"])
    return done("upstream", **p, statuses=statuses)


async def upstream_seq(request: Request) -> JSONResponse:
    p = params(request, "upstream-seq")
    statuses = await upstream.one_by_one(request.app.state.worker.session, p["ms"], p["n"])
    return done("upstream-seq", **p, statuses=statuses)


async def health(request: Request) -> JSONResponse:
    return done("health", status="ok")


async def info(request: Request) -> JSONResponse:
    threads = int(anyio.to_thread.current_default_thread_limiter().total_tokens)
    return JSONResponse(asgi.info("starlette", request.app.state.worker, threads))


async def bad_param(request: Request, exc: BadParam) -> Response:
    return JSONResponse(exc.body(), status_code=400)


async def upstream_failed(request: Request, exc: upstream.UpstreamError) -> Response:
    return JSONResponse(exc.body(), status_code=exc.status)


async def http_error(request: Request, exc: HTTPException) -> Response:
    # Starlette's own 404/405 are plain text; every target answers JSON (405 keeps its Allow).
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


HANDLERS: dict[str, Callable[[Request], Any]] = {
    "hello": hello,
    "sync": sync,
    "async": async_,
    "blocking": blocking,
    "executor": executor,
    "gather": gather,
    "sequential": sequential,
    "cpu": cpu,
    "cpu-pool": cpu_pool,
    "upstream": upstream_,
    "upstream-seq": upstream_seq,
    "health": health,
    "info": info,
}
assert set(HANDLERS) == set(CONTRACT.names()), "every contract endpoint needs a handler"

app = Starlette(
    # Paths come from the contract, so a renamed path cannot drift from it.
    routes=[Route(CONTRACT[name].path, handler) for name, handler in HANDLERS.items()],
    exception_handlers={
        BadParam: bad_param,
        upstream.UpstreamError: upstream_failed,
        404: http_error,
        405: http_error,
    },
    lifespan=lifespan,
)
