"""FastAPI target. Plain `def` endpoints run in anyio's thread pool, `async def` endpoints on
the event loop; bounds come from the contract through FastAPI's own Query validation (422)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from lab import asgi, knobs, upstream
from lab.contract import load
from lab.work import fnv1a

CONTRACT = load()
MS = CONTRACT["sync"].param("ms")
WAITS = CONTRACT["gather"].param("n")
ITERATIONS = CONTRACT["cpu"].param("n")
assert MS and WAITS and ITERATIONS

Ms = Query(MS.default, ge=MS.minimum, le=MS.maximum, description=MS.description)
Waits = Query(WAITS.default, ge=WAITS.minimum, le=WAITS.maximum, description=WAITS.description)
Iterations = Query(ITERATIONS.default, ge=ITERATIONS.minimum, le=ITERATIONS.maximum)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    asgi.size_anyio_pool()
    async with asgi.serving(knobs.executor_threads()) as worker:
        app.state.worker = worker
        yield


app = FastAPI(title="lab fastapi target", lifespan=lifespan, docs_url=None, redoc_url=None)


@app.exception_handler(upstream.UpstreamError)
async def upstream_failed(request: Request, exc: upstream.UpstreamError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def done(endpoint: str, **fields: Any) -> dict[str, Any]:
    return {"endpoint": endpoint, "pid": os.getpid(), **fields}


@app.get("/hello")
async def hello() -> dict[str, Any]:
    return done("hello", message="hello, world")


@app.get("/sync")
def sync(ms: int = Ms) -> dict[str, Any]:
    time.sleep(ms / 1000)
    return done("sync", ms=ms)


@app.get("/async")
async def async_(ms: int = Ms) -> dict[str, Any]:
    await asyncio.sleep(ms / 1000)
    return done("async", ms=ms)


@app.get("/blocking")
async def blocking(ms: int = Ms) -> dict[str, Any]:
    time.sleep(ms / 1000)  # the anti-pattern on purpose: it stops this worker's event loop
    return done("blocking", ms=ms)


@app.get("/executor")
async def executor(ms: int = Ms) -> dict[str, Any]:
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, ms / 1000)
    return done("executor", ms=ms)


@app.get("/gather")
async def gather(ms: int = Ms, n: int = Waits) -> dict[str, Any]:
    await asyncio.gather(*(asyncio.sleep(ms / 1000) for _ in range(n)))
    return done("gather", ms=ms, n=n)


@app.get("/sequential")
async def sequential(ms: int = Ms, n: int = Waits) -> dict[str, Any]:
    for _ in range(n):
        await asyncio.sleep(ms / 1000)
    return done("sequential", ms=ms, n=n)


@app.get("/cpu")
async def cpu(n: int = Iterations) -> dict[str, Any]:
    return done("cpu", n=n, result=fnv1a(n))  # inline: holds the event loop while it runs


@app.get("/cpu-pool")
async def cpu_pool(request: Request, n: int = Iterations) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(request.app.state.worker.pool, fnv1a, n)
    return done("cpu-pool", n=n, result=result)


@app.get("/upstream")
async def upstream_(request: Request, ms: int = Ms, n: int = Waits) -> dict[str, Any]:
    statuses = await upstream.fan_out(request.app.state.worker.session, ms, n)
    return done("upstream", ms=ms, n=n, statuses=statuses)


@app.get("/upstream-seq")
async def upstream_seq(request: Request, ms: int = Ms, n: int = Waits) -> dict[str, Any]:
    statuses = await upstream.one_by_one(request.app.state.worker.session, ms, n)
    return done("upstream-seq", ms=ms, n=n, statuses=statuses)


@app.get("/health")
async def health() -> dict[str, Any]:
    return done("health", status="ok")


@app.get("/info")
async def info(request: Request) -> dict[str, Any]:
    threads = anyio.to_thread.current_default_thread_limiter().total_tokens
    return asgi.info("fastapi", request.app.state.worker, int(threads))
