"""Helpers for the tests: the lab's timed probes, raw requests with any method and headers,
and a look inside JSON bodies."""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lab.proc.probe import Reply, batch, get

__all__ = ["Raw", "Reply", "batch", "get", "request", "string_values"]


@dataclass
class Raw:
    status: int
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, else the text
    raw: bytes
    seconds: float

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def request(
    base: str,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> Raw:
    """One request with any method, on a fresh connection; HEAD reads no body."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        started = time.perf_counter()
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        seconds = time.perf_counter() - started
        found = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode(errors="replace")
    return Raw(response.status, found, body, raw, seconds)


def string_values(node: Any) -> set[str]:
    """Every string anywhere in a decoded JSON document."""
    if isinstance(node, str):
        return {node}
    if isinstance(node, dict):
        return set().union(*(string_values(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(string_values(v) for v in node), set())
    return set()
