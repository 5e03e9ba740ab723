"""aiohttp target. aiohttp routes only coroutines and runs them on the event loop; a blocking
`def` belongs in an executor, so /sync runs in the loop's default executor (the one /executor
uses: here THREADS and EXECUTOR_THREADS size one pool). A middleware gives the contract's
404/405 and error answers; the endpoints' work is labkit's."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream

CONTRACT = load()
WORKER = web.AppKey("worker", eventloop.Worker)
# web.run_app's shutdown_timeout. aiohttp waits it twice: for handlers to finish, then for
# the cancelled ones to end; the gunicorn profile sets --graceful-timeout instead.
GRACEFUL_S = 1.5
SERVED_BY: dict[str, Any] = {}  # what /info cannot find alone when web.run_app serves (below)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serving(app: web.Application) -> AsyncIterator[None]:
    size = knobs.shared_executor_threads()  # a cleanup context: runs in every worker process
    async with eventloop.serving(size, sync_threads=size, framework="aiohttp") as app[WORKER]:
        yield


@web.middleware
async def contract_answers(request: web.Request, handler: Handler) -> web.StreamResponse:
    if refused := errors.refusal(request.method, request.path):  # ahead of aiohttp's HEAD
        body, status, headers = refused
        return web.json_response(body, status=status, headers=headers)
    try:
        return await handler(request)
    except errors.LabError as exc:  # a bad parameter (400), the upstream (502, 504)
        return web.json_response(exc.body(), status=exc.status)
    except Exception:
        request.app.logger.exception("internal error")
        return web.json_response(errors.INTERNAL, status=500)


def query(request: web.Request, name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.query.items())


async def sync(request: web.Request) -> web.Response:
    p = query(request, "sync")  # the blocking `def` work, in the default executor
    body = await asyncio.get_running_loop().run_in_executor(None, lambda: endpoints.sync(**p))
    return web.json_response(body)


def on_loop(name: str) -> Handler:
    """A handler running labkit's coroutine for `name` on the worker's loop."""

    async def handler(request: web.Request) -> web.Response:
        rid = upstream.request_id(request.headers.get(upstream.REQUEST_ID))
        work = eventloop.ENDPOINTS[name]
        return web.json_response(await work(request.app[WORKER], query(request, name), rid))

    return handler


async def info(request: web.Request) -> web.Response:
    return web.json_response(eventloop.info("aiohttp", request.app[WORKER], **SERVED_BY))


app = web.Application(middlewares=[contract_answers])
app.cleanup_ctx.append(serving)
app.add_routes([web.get(CONTRACT[n].path, on_loop(n)) for n in eventloop.ENDPOINTS])
app.add_routes([web.get("/sync", sync), web.get("/info", info)])

if __name__ == "__main__":
    SERVED_BY.update(workers=1, server_name="aiohttp", graceful_s=GRACEFUL_S)  # one process
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))
    web.run_app(app, host=host, port=port, shutdown_timeout=GRACEFUL_S, print=None)
