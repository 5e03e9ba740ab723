"""The contract's error answers (contract §1, §4), the same JSON on every target.

Errors an endpoint raises are LabError: answer `exc.body()` with `exc.status`, e.g.
    400: labkit.params.BadParam                   {"error": ..., "param": ...}
    502/504: labkit.upstream.UpstreamError        {"error": ...}
and the rest:
- 404: not_found(path)                            {"error": "not found", "path": ...}
- 405: method_not_allowed(method), with ALLOW     {"error": "method not allowed", "method": ...}
- 500: INTERNAL                                   {"error": "internal error"}

`refusal(method, path)` decides 404/405 before routing, for any method: frameworks add HEAD
and OPTIONS to GET routes on their own, and the contract serves GET only. Call it from a
`before_request` hook (Flask, Quart), or put the middleware in front of the whole app:
labkit.asgi.GetOnly (any ASGI app), labkit.wsgi.GetOnly (any WSGI app). A framework that serves
both (Django) wraps each of its two handlers; `refusal_answer` is what both middlewares send.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from lab.contract import load

ALLOW = {"Allow": "GET"}
INTERNAL: dict[str, str] = {"error": "internal error"}
PATHS = frozenset(e.path for e in load().endpoints)


class LabError(Exception):
    """An error with its contract answer: HTTP `status` and JSON `body()`."""

    status = 500

    def __init__(self, message: str, **fields: str) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def body(self) -> dict[str, str]:
        return {"error": self.message, **self.fields}


def not_found(path: str) -> dict[str, str]:
    return {"error": "not found", "path": path}


def method_not_allowed(method: str) -> dict[str, str]:
    return {"error": "method not allowed", "method": method}


def refusal(method: str, path: str) -> tuple[dict[str, Any], int, dict[str, str]] | None:
    """(body, status, headers) when the contract refuses this method or path, else None: the
    shape a Flask or Quart view (or before_request hook) may return as it is."""
    if path not in PATHS:
        return not_found(path), 404, {}
    if method != "GET":
        return method_not_allowed(method), 405, ALLOW
    return None


def refusal_answer(method: str, path: str) -> tuple[str, list[tuple[str, str]], bytes] | None:
    """refusal() as an HTTP answer, for middleware in front of an app: the status line ('405
    Method Not Allowed'), the headers (Content-Type, Content-Length, Allow) and the JSON body
    (a HEAD answer has the same headers and no body: drop it). None: let the app answer."""
    refused = refusal(method, path)
    if refused is None:
        return None
    body, status, extra = refused
    content = json.dumps(body).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(content))),
        *extra.items(),
    ]
    return f"{status} {HTTPStatus(status).phrase}", headers, content
