"""Calls to the upstream service (/upstream, /upstream-seq), shared by the Python targets so
that they differ only in the client their stack calls for: aiohttp for the ASGI targets
(one session per worker, opened in the lifespan), httpx.Client for the WSGI target."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import aiohttp
import httpx

TIMEOUT_S = 15.0  # above the contract's largest ms (10 s), so only a stuck upstream times out
DEFAULT_URL = "http://127.0.0.1:8001"


def base_url() -> str:
    return os.environ.get("UPSTREAM_URL", DEFAULT_URL).rstrip("/")


class UpstreamError(Exception):
    """The upstream failed (status 502) or timed out (504)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> dict[str, str]:
        return {"error": self.message}


def _delay_url(ms: int) -> str:
    return f"{base_url()}/delay?ms={ms}"


def _check(status: int) -> int:
    if status != 200:
        raise UpstreamError(502, f"upstream answered {status}")
    return status


# --- asyncio (ASGI targets) -------------------------------------------------------------


def open_session() -> aiohttp.ClientSession:
    # limit=0: no cap on connections, so capacity is bounded only by the load itself.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)
    )


async def _get(session: aiohttp.ClientSession, ms: int) -> int:
    try:
        async with session.get(_delay_url(ms)) as response:
            await response.read()
            return _check(response.status)
    except TimeoutError as exc:
        raise UpstreamError(504, "upstream timed out") from exc
    except aiohttp.ClientError as exc:
        raise UpstreamError(502, f"upstream unreachable: {exc}") from exc


async def fan_out(session: aiohttp.ClientSession, ms: int, n: int) -> list[int]:
    return list(await asyncio.gather(*(_get(session, ms) for _ in range(n))))


async def one_by_one(session: aiohttp.ClientSession, ms: int, n: int) -> list[int]:
    return [await _get(session, ms) for _ in range(n)]


# --- threads (WSGI target) ----------------------------------------------------------------


def open_client() -> httpx.Client:
    # httpx.Client is thread-safe and pools connections across the worker's threads.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    return httpx.Client(limits=limits, timeout=TIMEOUT_S)


def get_sync(client: httpx.Client, ms: int) -> int:
    try:
        return _check(client.get(_delay_url(ms)).status_code)
    except httpx.TimeoutException as exc:
        raise UpstreamError(504, "upstream timed out") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(502, f"upstream unreachable: {exc}") from exc


def fan_out_sync(client: httpx.Client, threads: ThreadPoolExecutor, ms: int, n: int) -> list[int]:
    call: Callable[[int], int] = lambda _: get_sync(client, ms)  # noqa: E731
    return list(threads.map(call, range(n)))


def one_by_one_sync(client: httpx.Client, ms: int, n: int) -> list[int]:
    return [get_sync(client, ms) for _ in range(n)]
