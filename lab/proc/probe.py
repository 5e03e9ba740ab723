"""Timed HTTP probes: one request on an open connection, and K requests released at once.
The conformance suite times capacity claims with them; the runner draws per-request
timelines (start, end, worker pid) with them."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools


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
    return response.status, response.getheader("Content-Type", ""), _decoded(raw), closed


def _decoded(raw: bytes | bytearray) -> Any:
    """An answer's body: its JSON, or the raw text when it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


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


class _Answer:
    """httptools' callbacks for one answer."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.head_done = False
        self.done = False
        self.keep_alive = False
        self.parser: Any = None

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.done = True
        self.keep_alive = self.parser.should_keep_alive()  # before llhttp resets for the next


LENGTHS = {"content-length", "transfer-encoding"}  # a body that ends before the connection


class LeanConnection:
    """A kept-alive connection as Connection, for a calibration that must keep a fast server
    busy: the request http.client sends (GET, Host, Accept-Encoding: identity) written here,
    each answer read by httptools (uvicorn's parser, llhttp in C). http.client parses every
    answer's headers with the email package, about 77 µs of its thread a request, so that
    fifty threads of it reach 12,000-14,000 requests a second and leave a fast server's CPU
    idle between them (CONTRACT.md, 'The capacity model', d). A connection the server
    closes is opened again for the next request, as Connection's."""

    def __init__(self, base: str, timeout: float = 30.0) -> None:
        parts = urlsplit(base)
        host = parts.hostname or "127.0.0.1"
        self.address = (host, parts.port or 80)
        self.timeout = timeout
        named = f"[{host}]" if ":" in host else host
        self.head = f"Host: {named}:{self.address[1]}\r\nAccept-Encoding: identity\r\n\r\n"
        self.sock: socket.socket | None = None
        self._open()

    def _open(self) -> None:
        self.sock = socket.create_connection(self.address, self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def get(self, path: str) -> Reply:
        started = time.perf_counter()
        if self.sock is None:
            self._open()
        assert self.sock is not None
        answer = _Answer()
        parser = answer.parser = httptools.HttpResponseParser(answer)
        try:
            self.sock.sendall(f"GET {path} HTTP/1.1\r\n{self.head}".encode("latin-1"))
            while not answer.done:
                chunk = self.sock.recv(65536)
                if not chunk:  # the end of a body without a length, or of the connection
                    if answer.head_done and not answer.headers.keys() & LENGTHS:
                        break
                    raise ConnectionResetError("the server closed the connection mid-answer")
                parser.feed_data(chunk)
        except httptools.HttpParserError as exc:
            self.close()
            raise ConnectionError(f"not an HTTP answer: {exc}") from exc
        except BaseException:
            self.close()
            raise
        closed = not answer.keep_alive or not answer.done
        if closed:
            self.close()
        content_type = answer.headers.get("content-type", "")
        seconds = time.perf_counter() - started
        body = _decoded(answer.body)
        return Reply(parser.get_status_code(), content_type, body, seconds, closed=closed)

    def __enter__(self) -> LeanConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Client = Connection | LeanConnection  # a kept-alive connection for requests one after another


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
