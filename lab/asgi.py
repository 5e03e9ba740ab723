"""What every ASGI target's worker process holds, made when the worker starts serving (the
lifespan; Quart's while_serving) and released when it stops: the executor /executor uses,
the /cpu-pool process pool, and the aiohttp session for /upstream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio.to_thread

from lab import appinfo, knobs, pool, upstream


@dataclass(frozen=True)
class Worker:
    executor_threads: int
    pool_processes: int
    pool: ProcessPoolExecutor
    session: aiohttp.ClientSession


def size_anyio_pool() -> int:
    """Apply THREADS to anyio's thread limiter (the pool Starlette and FastAPI run `def`
    endpoints in) and return its size. Reading the limiter also loads anyio's asyncio
    backend now: left to the first `def` request, that import costs it about 150 ms."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    threads = knobs.threads()
    if threads is not None:
        limiter.total_tokens = threads
    return int(limiter.total_tokens)


@asynccontextmanager
async def serving(executor_threads: int) -> AsyncIterator[Worker]:
    """The worker's resources for as long as it serves. Call it on the worker's event loop,
    in the worker's main thread (lab.pool's processes die with the thread that forks them)."""
    executor = ThreadPoolExecutor(executor_threads, thread_name_prefix="executor")
    asyncio.get_running_loop().set_default_executor(executor)
    processes = knobs.pool_processes()
    cpu_pool = pool.start(processes)
    session = upstream.open_session()
    try:
        yield Worker(executor_threads, processes, cpu_pool, session)
    finally:
        await session.close()
        pool.stop(cpu_pool)
        executor.shutdown(wait=False, cancel_futures=True)


def info(framework: str, worker: Worker, sync_threads: int) -> dict[str, Any]:
    """/info of an ASGI target: an event loop per worker process, `def` handlers in a thread
    pool of sync_threads (anyio's limiter in Starlette and FastAPI, the default executor in
    Quart), and this worker's resources. Every number comes from the running configuration."""
    workers = knobs.workers()
    capacity = {
        "hello": None,
        "sync": workers * sync_threads,  # `def` handlers: the thread pool, per worker
        "async": None,  # awaiting holds nothing
        "blocking": workers,  # a blocking sleep holds the whole event loop of its worker
        "executor": workers * worker.executor_threads,
        "gather": None,
        "sequential": None,
        "cpu": workers,  # inline CPU work holds the event loop too
        "cpu-pool": workers * worker.pool_processes,
        "upstream": None,  # aiohttp without a connection cap
        "upstream-seq": None,
    }
    return {
        **appinfo.base(framework, framework),
        "workers": workers,
        "threads": sync_threads,
        "executor_threads": worker.executor_threads,
        "pool_processes": worker.pool_processes,
        "capacity": appinfo.check_capacity(capacity),
    }
