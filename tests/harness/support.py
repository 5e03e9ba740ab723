"""Helpers for the tests: the lab's timed probes, raw requests with any method and headers,
and a look inside JSON bodies."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lab.proc import probe, server
from lab.proc.probe import Reply, batch, get

__all__ = ["Raw", "Reply", "batch", "get", "request", "script_server", "string_values"]


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


@contextlib.contextmanager
def script_server(script: str, *args: str, ready: str = "/hello") -> Iterator[tuple[str, int]]:
    """A test server: `python -c script PORT *args` on a free port, once it answers `ready`
    (within 10 s); yields its base URL and pid, and kills it afterwards."""
    port = server.free_port("127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-c", script, str(port), *args])
    try:
        base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 10
        while True:
            try:
                with probe.Connection(base, timeout=2) as c:
                    c.get(ready)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield base, proc.pid
    finally:
        proc.kill()
        proc.wait(10)
