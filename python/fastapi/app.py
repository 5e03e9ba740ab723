"""FastAPI target. Plain `def` endpoints run in anyio's thread pool, `async def` endpoints on
the event loop. The query goes through a dependency that parses it with labkit.params (one
grammar, repeats refused: 400 like every target) instead of typed Query parameters, whose
validation would accept `1.0`, `+5` or `1_0` and answer 422. The endpoints' work is labkit's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream
from labkit.asgi import GetOnly

CONTRACT = load()
Body = dict[str, Any]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    threads = eventloop.size_anyio_pool()  # `def` endpoints: anyio's pool
    async with eventloop.serving(knobs.executor_threads(), threads) as worker:
        app.state.worker = worker
        yield


app = FastAPI(title="lab fastapi target", lifespan=lifespan, docs_url=None, redoc_url=None)
app.add_middleware(GetOnly)  # 404/405 JSON for any method, before routing


def query(name: str) -> Callable[[Request], Awaitable[dict[str, int]]]:
    """A dependency: the endpoint's parameters. async, so it does not take a pool thread."""

    async def parse(request: Request) -> dict[str, int]:
        return params.parse(CONTRACT[name], request.query_params.multi_items())

    return parse


def worker(request: Request) -> eventloop.Worker:
    return request.app.state.worker  # type: ignore[no-any-return]


@app.get("/sync")
def sync(p: Annotated[dict[str, int], Depends(query("sync"))]) -> Body:
    return endpoints.sync(**p)  # a def: FastAPI runs it in anyio's thread pool


def on_loop(name: str) -> Callable[..., Awaitable[Body]]:
    """An `async def` endpoint running labkit's coroutine for `name` on the worker's loop."""

    async def endpoint(
        p: Annotated[dict[str, int], Depends(query(name))],
        w: Annotated[eventloop.Worker, Depends(worker)],
        x_lab_request_id: Annotated[str | None, Header()] = None,
    ) -> Body:
        return await eventloop.ENDPOINTS[name](w, p, upstream.request_id(x_lab_request_id))

    return endpoint


for name in eventloop.ENDPOINTS:
    app.get(CONTRACT[name].path, name=name)(on_loop(name))


@app.get("/info")
async def info(w: Annotated[eventloop.Worker, Depends(worker)]) -> Body:
    return eventloop.info("fastapi", w)


@app.exception_handler(params.BadParam)
async def bad_param(request: Request, exc: params.BadParam) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=400)


@app.exception_handler(upstream.UpstreamError)
async def upstream_failed(request: Request, exc: upstream.UpstreamError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


@app.exception_handler(Exception)
async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(errors.INTERNAL, status_code=500)  # Starlette still logs the traceback


assert {r.path for r in app.routes} >= errors.PATHS, "every contract endpoint needs a route"
