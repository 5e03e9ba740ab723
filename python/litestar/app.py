"""Litestar target. `def` handlers marked sync_to_thread run in the event loop's default
executor (litestar.concurrency.sync_to_thread, no executor of its own set), the one /executor
uses: here THREADS and EXECUTOR_THREADS size one pool. Handlers take the raw query and parse
it with labkit.params (400), not typed parameters (Litestar's own validation). The ASGI app
the server runs is Litestar's wrapped in labkit's GetOnly: Litestar's middleware runs after
routing, too late for the contract's 404/405 on any method."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from litestar import Litestar, Request, Response, get

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream
from labkit.asgi import GetOnly
from labkit.endpoints import Body

CONTRACT = load()


@asynccontextmanager
async def lifespan(app: Litestar) -> AsyncIterator[None]:
    size = knobs.shared_executor_threads()  # `def` handlers: the default executor
    async with eventloop.serving(size, sync_threads=size, framework="litestar") as worker:
        app.state.worker = worker
        yield


def query(request: Request, name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.query_params.multi_items())


@get("/sync", sync_to_thread=True)
def sync(request: Request) -> Body:
    return endpoints.sync(**query(request, "sync"))


def on_loop(name: str) -> Callable[[Request], Awaitable[Body]]:
    """An `async def` handler running labkit's coroutine for `name` on the worker's loop."""

    async def handler(request: Request) -> Body:
        rid = upstream.request_id(request.headers.get(upstream.REQUEST_ID))
        work = eventloop.ENDPOINTS[name]
        return await work(request.app.state.worker, query(request, name), rid)

    return handler


@get("/info")
async def info(request: Request) -> Body:
    return eventloop.info("litestar", request.app.state.worker)


def refused(request: Request, exc: errors.LabError) -> Response[Body]:
    return Response(exc.body(), status_code=exc.status)  # 400, or the upstream's 502/504


def internal_error(request: Request, exc: Exception) -> Response[Body]:
    request.logger.exception("internal error")
    return Response(errors.INTERNAL, status_code=500)


handlers = [get(CONTRACT[n].path, name=n)(on_loop(n)) for n in eventloop.ENDPOINTS]
litestar = Litestar(
    route_handlers=[*handlers, sync, info],
    lifespan=[lifespan],
    exception_handlers={errors.LabError: refused, 500: internal_error},
)
app = GetOnly(litestar)  # 404/405 JSON for any method, before Litestar routes
