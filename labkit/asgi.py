"""ASGI-only helpers: middleware for any ASGI app (Starlette, FastAPI, Quart, Litestar)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from labkit.errors import refusal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class GetOnly:
    """Answers 404 (unknown path, any method) and 405 + `Allow: GET` (a contract path with any
    other method, HEAD and OPTIONS included) in JSON before the app routes the request, so the
    framework's own automatic HEAD/OPTIONS and its text/HTML error pages never answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = scope["type"] == "http" and refusal(scope["method"], scope["path"])
        if not refused:
            await self.app(scope, receive, send)
            return
        body, status, headers = refused
        content = json.dumps(body).encode()
        raw_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
            *((k.lower().encode(), v.encode()) for k, v in headers.items()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        # HEAD: headers only (the servers would drop the body anyway).
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else content}
        )
