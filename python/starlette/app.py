"""Starlette target. Plain `def` endpoints run in anyio's thread pool, `async def` endpoints on
the event loop. Starlette validates nothing: each endpoint parses its query with labkit.params
(400 through an exception handler). The endpoints' work is labkit's; what is Starlette's here
is the routing, the handlers, the lifespan and the error handlers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream
from labkit.asgi import GetOnly

CONTRACT = load()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    threads = eventloop.size_anyio_pool()  # `def` endpoints: anyio's pool
    executor = knobs.executor_threads()  # /executor: the loop's default executor
    async with eventloop.serving(executor, threads, framework="starlette") as worker:
        app.state.worker = worker
        yield


def query(request: Request, name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.query_params.multi_items())


def sync(request: Request) -> JSONResponse:
    # A plain def: Starlette runs it with anyio.to_thread.run_sync, in anyio's thread pool.
    return JSONResponse(endpoints.sync(**query(request, "sync")))


def on_loop(name: str) -> Callable[[Request], Awaitable[JSONResponse]]:
    """An `async def` endpoint running labkit's coroutine for `name` on the worker's loop."""

    async def endpoint(request: Request) -> JSONResponse:
        rid = upstream.request_id(request.headers.get(upstream.REQUEST_ID))
        work = eventloop.ENDPOINTS[name]
        return JSONResponse(await work(request.app.state.worker, query(request, name), rid))

    return endpoint


async def info(request: Request) -> JSONResponse:
    return JSONResponse(eventloop.info("starlette", request.app.state.worker))


async def refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.LabError)  # a bad parameter (400), the upstream (502, 504)
    return JSONResponse(exc.body(), status_code=exc.status)


async def internal_error(request: Request, exc: Exception) -> Response:
    return JSONResponse(errors.INTERNAL, status_code=500)  # Starlette still logs the traceback


routes = [Route(CONTRACT[n].path, on_loop(n)) for n in eventloop.ENDPOINTS]
routes += [Route("/sync", sync), Route("/info", info)]
assert {r.path for r in routes} == errors.PATHS, "every contract endpoint needs a route"

app = Starlette(
    routes=routes,
    middleware=[Middleware(GetOnly)],  # 404/405 JSON for any method, before routing
    exception_handlers={errors.LabError: refused, Exception: internal_error},
    lifespan=lifespan,
)
