"""WSGI-only helpers: middleware for any WSGI app (Django's WSGIHandler, Flask, ...).

    app = GetOnly(app)                          # 404/405 JSON before the app routes anything

The same answers as labkit.asgi.GetOnly, so that a framework serving both (Django) refuses
the contract's way under either server."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from labkit.errors import refusal_answer

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


def path_of(environ: Environ) -> str:
    """The request's decoded path: WSGI carries it as latin-1 (PEP 3333), the URL's bytes are
    UTF-8."""
    return str(environ.get("PATH_INFO", "")).encode("latin-1").decode("utf-8", "replace")


class GetOnly:
    """Answers 404 (unknown path, any method) and 405 + `Allow: GET` (a contract path with any
    other method, HEAD and OPTIONS included) in JSON before the app sees the request: no
    HTML error page, no redirect (Django's APPEND_SLASH), no automatic HEAD."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        answer = refusal_answer(method, path_of(environ))
        if not answer:
            return self.app(environ, start_response)
        status, headers, content = answer
        start_response(status, headers)
        return [b"" if method == "HEAD" else content]
