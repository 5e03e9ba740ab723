"""Timed HTTP probes: one request on an open connection, and K requests released at once.
The conformance suite times capacity claims with them; the runner draws per-request
timelines (start, end, worker pid) with them."""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int
    content_type: str
    body: Any  # decoded JSON, or the raw text when it is not JSON
    seconds: float
    start: float = 0.0  # offsets from the batch's release, in seconds
    end: float = 0.0
    # the server closed the connection after this reply (Connection: close, or HTTP/1.0):
    # the next request on it opens a new one, as k6 then does for every request
    closed: bool = False


def _connect(base: str, timeout: float) -> http.client.HTTPConnection:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    conn.connect()
    return conn


def _exchange(conn: http.client.HTTPConnection, path: str) -> tuple[int, str, Any, bool]:
    conn.request("GET", path)
    response = conn.getresponse()
    closed = response.will_close
    raw = response.read()
    content_type = response.getheader("Content-Type", "")
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode(errors="replace")
    return response.status, content_type, body, closed


class Connection:
    """A kept-alive connection for requests one after another."""

    def __init__(self, base: str, timeout: float = 30.0) -> None:
        self.conn = _connect(base, timeout)

    def get(self, path: str) -> Reply:
        started = time.perf_counter()
        status, content_type, body, closed = _exchange(self.conn, path)
        return Reply(status, content_type, body, time.perf_counter() - started, closed=closed)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def get(base: str, path: str, timeout: float = 30.0) -> Reply:
    """One GET on a fresh, already open connection; seconds covers request to full response."""
    conn = _connect(base, timeout)
    try:
        started = time.perf_counter()
        status, content_type, body, closed = _exchange(conn, path)
        return Reply(status, content_type, body, time.perf_counter() - started, closed=closed)
    finally:
        conn.close()


def batch(base: str, path: str, k: int, timeout: float = 30.0) -> tuple[float, list[Reply]]:
    """K concurrent GETs: all connections open first, then every request is sent at once.
    Returns the wall time from release to the last response, and the replies."""
    conns = [_connect(base, timeout) for _ in range(k)]
    release = threading.Barrier(k + 1)
    replies: list[Reply | BaseException] = [RuntimeError("no reply")] * k
    t0 = 0.0

    def one(i: int) -> None:
        release.wait()
        started = time.perf_counter()
        try:
            status, content_type, body, closed = _exchange(conns[i], path)
            ended = time.perf_counter()
            replies[i] = Reply(
                status, content_type, body, ended - started, started - t0, ended - t0, closed
            )
        except BaseException as exc:  # reported by the caller
            replies[i] = exc

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    release.wait()
    for t in threads:
        t.join(timeout + 5)
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    failed = [r for r in replies if isinstance(r, BaseException)]
    if failed:
        raise RuntimeError(f"{len(failed)} of {k} requests failed: {failed[0]!r}")
    return elapsed, replies  # type: ignore[return-value]
