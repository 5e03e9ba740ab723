"""The contract's endpoints as plain functions: each does the endpoint's work and returns its JSON
body (a dict with "endpoint" and "pid" first). A target's handler parses the query
(labkit.params), calls one of these in the way its framework runs handlers, and serializes the
dict. Plain `def`s are for threads (a `def` handler, WSGI); `async def`s for an event loop.

| endpoint      | in a thread (def)          | on an event loop (async def)              |
|---------------|----------------------------|-------------------------------------------|
| /hello        | hello()                    | hello()                                   |
| /sync         | sync(ms)                   | (always a def handler: the point of it)   |
| /async        |                            | await wait(ms)                            |
| /blocking     |                            | blocking(ms) (blocks the loop on purpose) |
| /executor     | in_executor(ms) (its work) | await executor(ms)                        |
| /gather       |                            | await gather(ms, n)                       |
| /sequential   |                            | await sequential(ms, n)                   |
| /cpu          | cpu(n)                     | cpu(n) (holds the loop on purpose)        |
| /cpu-pool     | cpu_pool_sync(pool, n)     | await cpu_pool(pool, n)                   |
| /upstream     | upstream_sync(...)         | await upstream(session, ms, n, rid)       |
| /upstream-seq | upstream_seq_sync(...)     | await upstream_seq(session, ms, n, rid)   |
| /health       | health()                   | health()                                  |
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import aiohttp
import httpx

from labkit import upstream as calls
from labkit.work import block, fnv1a

Body = dict[str, Any]


def body(endpoint: str, **fields: Any) -> Body:
    """A success body: the endpoint's name and this worker's pid, then its own fields."""
    return {"endpoint": endpoint, "pid": os.getpid(), **fields}


def hello() -> Body:
    return body("hello", message="hello, world")


def health() -> Body:
    return body("health", status="ok")


def sync(ms: int) -> Body:
    """A blocking sleep: call it from a `def` handler, which holds its thread meanwhile."""
    block(ms / 1000)
    return body("sync", ms=ms)


def blocking(ms: int) -> Body:
    """The anti-pattern: call it from an `async def` handler, where it stops the event loop."""
    block(ms / 1000)
    return body("blocking", ms=ms)


async def wait(ms: int) -> Body:
    """/async: a non-blocking wait."""
    await asyncio.sleep(ms / 1000)
    return body("async", ms=ms)


async def executor(ms: int) -> Body:
    """The blocking sleep pushed to the running loop's default executor."""
    await asyncio.get_running_loop().run_in_executor(None, block, ms / 1000)
    return body("executor", ms=ms)


def in_executor(ms: int) -> Body:
    """/executor's work, for a framework that hands it to an executor itself (Django's
    sync_to_async(..., executor=...)): call it in that executor's thread."""
    block(ms / 1000)
    return body("executor", ms=ms)


async def gather(ms: int, n: int) -> Body:
    await asyncio.gather(*(asyncio.sleep(ms / 1000) for _ in range(n)))
    return body("gather", ms=ms, n=n)


async def sequential(ms: int, n: int) -> Body:
    for _ in range(n):
        await asyncio.sleep(ms / 1000)
    return body("sequential", ms=ms, n=n)


def cpu(n: int) -> Body:
    """FNV-1a inline: holds the thread (and the GIL, and an event loop if called on one)."""
    return body("cpu", n=n, result=fnv1a(n))


async def cpu_pool(pool: Executor, n: int) -> Body:
    result = await asyncio.get_running_loop().run_in_executor(pool, fnv1a, n)
    return body("cpu-pool", n=n, result=result)


def cpu_pool_sync(pool: Executor, n: int) -> Body:
    return body("cpu-pool", n=n, result=pool.submit(fnv1a, n).result())


async def upstream(session: aiohttp.ClientSession, ms: int, n: int, rid: str | None) -> Body:
    """n concurrent upstream calls; `rid` is the request's X-Lab-Request-Id (or None)."""
    statuses = await calls.fan_out(session, ms, n, rid)
    return body("upstream", ms=ms, n=n, statuses=statuses)


async def upstream_seq(session: aiohttp.ClientSession, ms: int, n: int, rid: str | None) -> Body:
    statuses = await calls.one_by_one(session, ms, n, rid)
    return body("upstream-seq", ms=ms, n=n, statuses=statuses)


def upstream_sync(
    client: httpx.Client, fan_out: ThreadPoolExecutor, ms: int, n: int, rid: str | None
) -> Body:
    statuses = calls.fan_out_sync(client, fan_out, ms, n, rid)
    return body("upstream", ms=ms, n=n, statuses=statuses)


def upstream_seq_sync(client: httpx.Client, ms: int, n: int, rid: str | None) -> Body:
    statuses = calls.one_by_one_sync(client, ms, n, rid)
    return body("upstream-seq", ms=ms, n=n, statuses=statuses)
