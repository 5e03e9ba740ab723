"""ASGI-only helpers: middleware for any ASGI app (Starlette, FastAPI, Quart, Litestar, Django).

    app = GetOnly(app)                          # 404/405 JSON before the app routes anything
    app = Lifespan(app, resources)              # for an app without lifespan support (Django)

labkit.wsgi has GetOnly for WSGI apps."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from labkit.errors import refusal_answer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger(__name__)


class GetOnly:
    """Answers 404 (unknown path, any method) and 405 + `Allow: GET` (a contract path with any
    other method, HEAD and OPTIONS included) in JSON before the app routes the request, so the
    framework's own automatic HEAD/OPTIONS and its text/HTML error pages never answer. In
    front of the app's whole handler, it also answers when the app's own machinery is busy
    (Django logs every answer >= 400 through the event loop's default executor)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = scope["type"] == "http" and refusal_answer(scope["method"], scope["path"])
        if not answer:
            await self.app(scope, receive, send)
            return
        status, headers, content = answer
        raw_headers = [(k.lower().encode(), v.encode()) for k, v in headers]
        code = int(status.split()[0])
        await send({"type": "http.response.start", "status": code, "headers": raw_headers})
        # HEAD: headers only (the servers would drop the body anyway).
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else content}
        )


class Lifespan:
    """The ASGI lifespan protocol, answered in front of an app that has none (Django's
    ASGIHandler refuses every scope but "http"): `resources()`, an async context manager
    such as one entering labkit.eventloop.serving, is entered at lifespan.startup (on the
    server's event loop, in the worker's main thread, before the first request) and left at
    lifespan.shutdown (after the server's graceful timeout). A failure to start is reported
    as lifespan.startup.failed, and the server does not serve. Every other scope goes to the
    app."""

    def __init__(
        self, app: ASGIApp, resources: Callable[[], AbstractAsyncContextManager[Any]]
    ) -> None:
        self.app = app
        self.resources = resources

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        await receive()  # lifespan.startup
        context = self.resources()
        try:
            await context.__aenter__()
        except Exception as exc:
            log.exception("the worker's resources did not start")
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        try:
            await context.__aexit__(None, None, None)
        except Exception as exc:
            log.exception("the worker's resources did not stop cleanly")
            await send({"type": "lifespan.shutdown.failed", "message": repr(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})
