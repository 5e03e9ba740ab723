"""FastAPI target. Plain `def` endpoints run in anyio's thread pool, `async def` endpoints on
the event loop. A dependency parses the query with labkit.params (400, like every target):
typed Query parameters would accept `1.0`, `+5` or `1_0` and answer 422."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream
from labkit.asgi import GetOnly
from labkit.endpoints import Body

CONTRACT = load()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    threads = eventloop.size_anyio_pool()  # `def` endpoints: anyio's pool
    async with eventloop.serving(knobs.executor_threads(), threads, framework="fastapi") as worker:
        app.state.worker = worker
        yield


app = FastAPI(title="lab fastapi target", lifespan=lifespan, docs_url=None, redoc_url=None)
app.add_middleware(GetOnly)  # 404/405 JSON for any method, before routing


async def query(request: Request) -> dict[str, int]:
    """The parameters of the route's endpoint (named as in the contract); async: no thread."""
    return params.parse(CONTRACT[request.scope["route"].name], request.query_params.multi_items())


async def worker(request: Request) -> eventloop.Worker:
    # async, like `query`: FastAPI runs a plain `def` dependency in anyio's thread pool, so
    # every `async def` endpoint would hop to a thread and back for it (and, under load, wait
    # for the GIL the busy event loop holds: /async 10-13 % below the model at 50 VUs).
    return request.app.state.worker  # type: ignore[no-any-return]


Query = Annotated[dict[str, int], Depends(query)]
Running = Annotated[eventloop.Worker, Depends(worker)]  # this worker's resources


@app.get("/sync")
def sync(p: Query) -> Body:
    return endpoints.sync(**p)  # a def: FastAPI runs it in anyio's thread pool


def on_loop(name: str) -> Callable[..., Awaitable[Body]]:
    """An `async def` endpoint running labkit's coroutine for `name` on the worker's loop."""

    async def endpoint(p: Query, w: Running, x_lab_request_id: str | None = Header(None)) -> Body:
        return await eventloop.ENDPOINTS[name](w, p, upstream.request_id(x_lab_request_id))

    return endpoint


for name in eventloop.ENDPOINTS:
    app.get(CONTRACT[name].path, name=name)(on_loop(name))


@app.get("/info")
async def info(w: Running) -> Body:
    return eventloop.info("fastapi", w)


@app.exception_handler(errors.LabError)
async def refused(request: Request, exc: errors.LabError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)  # 400, or the upstream's 502/504


@app.exception_handler(Exception)
async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(errors.INTERNAL, status_code=500)  # Starlette still logs the traceback


assert {r.path for r in app.routes} >= errors.PATHS, "every contract endpoint needs a route"
