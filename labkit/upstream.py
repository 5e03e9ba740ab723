"""Calls to the upstream service (/upstream, /upstream-seq), so that targets differ only in the
client their stack calls for: aiohttp on an event loop (one session per worker, opened when
the worker starts serving), httpx.Client in threads (WSGI).

A request's `X-Lab-Request-Id` (1-64 of [A-Za-z0-9-]) is copied onto every upstream call it
makes, so that the upstream can count them (contract §5): pass `request_id(header_value)`.
Failures raise UpstreamError: 502 (unreachable, non-200) or 504 (slower than TIMEOUT_S)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

import aiohttp
import httpx

from labkit.errors import LabError

TIMEOUT_S = 15.0  # above the contract's largest ms (10 s), so only a stuck upstream times out
DEFAULT_URL = "http://127.0.0.1:8001"


REQUEST_ID = "X-Lab-Request-Id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9-]{1,64}")


def request_id(value: str | None) -> str | None:
    """The request id to forward, or None when the request carries none (or a malformed one)."""
    return value if value is not None and _REQUEST_ID.fullmatch(value) else None


def _headers(rid: str | None) -> dict[str, str]:
    return {REQUEST_ID: rid} if rid else {}


def base_url() -> str:
    return os.environ.get("UPSTREAM_URL", DEFAULT_URL).rstrip("/")


class UpstreamError(LabError):
    """The upstream failed (status 502) or timed out (504)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _delay_url(ms: int) -> str:
    return f"{base_url()}/delay?ms={ms}"


def _check(status: int) -> int:
    if status != 200:
        raise UpstreamError(502, f"upstream answered {status}")
    return status


# --- asyncio (ASGI targets) -------------------------------------------------------------


@asynccontextmanager
async def session_for(worker: object) -> AsyncIterator[aiohttp.ClientSession]:
    """The worker's session (labkit.eventloop's, on its event loop), or where the worker has
    none, one for this request, closed at its end: under WSGI an async view runs on an event
    loop made for that one request (asgiref's async_to_sync), where no session of the
    worker's can be used."""
    session = getattr(worker, "session", None)
    if session is not None:
        yield session
        return
    async with open_session() as session:
        yield session


def open_session() -> aiohttp.ClientSession:
    # limit=0: no cap on connections, so capacity is bounded only by the load itself.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)
    )


async def _get(session: aiohttp.ClientSession, ms: int, rid: str | None) -> int:
    try:
        async with session.get(_delay_url(ms), headers=_headers(rid)) as response:
            await response.read()
            return _check(response.status)
    except TimeoutError as exc:
        raise UpstreamError(504, "upstream timed out") from exc
    except aiohttp.ClientError as exc:
        raise UpstreamError(502, f"upstream unreachable: {exc}") from exc


async def fan_out(
    session: aiohttp.ClientSession, ms: int, n: int, rid: str | None = None
) -> list[int]:
    return list(await asyncio.gather(*(_get(session, ms, rid) for _ in range(n))))


async def one_by_one(
    session: aiohttp.ClientSession, ms: int, n: int, rid: str | None = None
) -> list[int]:
    return [await _get(session, ms, rid) for _ in range(n)]


# --- threads (WSGI target) ----------------------------------------------------------------


def open_client() -> httpx.Client:
    # httpx.Client is thread-safe and pools connections across the worker's threads.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    return httpx.Client(limits=limits, timeout=TIMEOUT_S)


def get_sync(client: httpx.Client, ms: int, rid: str | None = None) -> int:
    try:
        return _check(client.get(_delay_url(ms), headers=_headers(rid)).status_code)
    except httpx.TimeoutException as exc:
        raise UpstreamError(504, "upstream timed out") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(502, f"upstream unreachable: {exc}") from exc


def fan_out_sync(
    client: httpx.Client, threads: ThreadPoolExecutor, ms: int, n: int, rid: str | None = None
) -> list[int]:
    call: Callable[[int], int] = lambda _: get_sync(client, ms, rid)  # noqa: E731
    return list(threads.map(call, range(n)))


def one_by_one_sync(client: httpx.Client, ms: int, n: int, rid: str | None = None) -> list[int]:
    return [get_sync(client, ms, rid) for _ in range(n)]
