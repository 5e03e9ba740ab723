"""The event-loop worker model (ASGI servers, aiohttp): what one worker process holds while it
serves (its database pools included: labkit.db), its /info, and the endpoints as coroutines
of that worker.

    async with serving(executor_threads, sync_threads, framework="fastapi") as worker:  # lifespan
        ...
    body = await ENDPOINTS["gather"](worker, params, request_id)     # any endpoint but /sync
    info(framework, worker)                                          # /info

`/sync` is not in ENDPOINTS: each target writes it as a plain `def` handler, so that its
framework runs it the way it runs every `def` (anyio's pool, Quart's default executor, ...)
and calls labkit.endpoints.sync in it. `sync_threads` is the size of that pool, or None when
the framework gives each `def` a thread of its own (Django's ASGIHandler: no bound).

A framework that uses the loop's default executor itself (Django logs every answer >= 400
through it) keeps it: serving(..., default_executor=False) makes /executor's pool one of its
own (`worker.executor`, for the framework's own hand-off such as asgiref's sync_to_async). A
framework with a database layer of its own (Django's ORM and pool) passes `database`, which
opens it (labkit.db.open_sync(..., pool=...)); /db-blocking is then the same as /db."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio.to_thread

from labkit import db, endpoints, knobs, pool, upstream
from labkit import info as infos
from labkit.endpoints import Body
from labkit.work import release_blocked


@dataclass(frozen=True)
class Worker:
    executor_threads: int  # /executor's pool: the loop's default executor, unless its own
    sync_threads: int | None  # the pool the framework runs `def` handlers in (/sync); None: a
    # thread per request
    pool_processes: int
    pool: ProcessPoolExecutor
    session: aiohttp.ClientSession
    db: db.Pool[Any]  # asyncpg (/db, /db-rows), or the framework's own pool
    db_blocking: db.SyncPool | None  # psycopg_pool: /db-blocking, called on the loop; None:
    # /db-blocking is /db (a framework's own sync layer, which refuses to run on the loop)
    executor: ThreadPoolExecutor | None = None  # /executor's pool, executor_threads threads


def size_anyio_pool() -> int:
    """Apply THREADS to anyio's thread limiter (the pool Starlette, FastAPI and Litestar's
    sync_to_thread run `def` handlers in) and return its size. Reading the limiter also loads
    anyio's asyncio backend now: left to the first `def` request, that import costs ~150 ms."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    threads = knobs.threads()
    if threads is not None:
        limiter.total_tokens = threads
    return int(limiter.total_tokens)


@asynccontextmanager
async def serving(
    executor_threads: int,
    sync_threads: int | None,
    *,
    framework: str,
    default_executor: bool = True,
    database: Callable[[], db.SyncPool] | None = None,
) -> AsyncIterator[Worker]:
    """The worker's resources for as long as it serves. Enter it on the worker's event loop, in
    its main thread (labkit.pool's processes die with the thread that forks them; they are
    forked before the database pools start threads). `framework` names the database
    connections when LAB_TARGET does not. `default_executor=False` leaves the loop's default
    executor to the framework (/executor then runs in worker.executor only); `database` opens
    the framework's own pool instead of the kit's. On the way out it first wakes every thread
    still blocked in a wait, so that no in-flight /sync or /executor holds the process past
    its server's graceful timeout, and cuts what the database pools still hold."""
    executor = ThreadPoolExecutor(executor_threads, thread_name_prefix="executor")
    if default_executor:
        asyncio.get_running_loop().set_default_executor(executor)
    processes = knobs.pool_processes()
    cpu_pool = pool.start(processes)
    session = upstream.open_session()
    if database is None:
        main, blocking = await db.open_async(framework)
    else:
        main, blocking = database(), None
    try:
        yield Worker(
            executor_threads, sync_threads, processes, cpu_pool, session, main, blocking, executor
        )
    finally:
        release_blocked()
        if blocking is None:
            db.close_sync(main)
        else:
            await db.close_async(main, blocking)
        await session.close()
        pool.stop(cpu_pool)
        executor.shutdown(wait=False, cancel_futures=True)


def info(framework: str, worker: Worker, workers: int | None = None, **base: Any) -> dict[str, Any]:
    """/info of an event-loop target: an event loop per worker process, `def` handlers in a pool
    of worker.sync_threads (or a thread each: no bound), and this worker's resources. Every
    number comes from the running configuration: `workers` is the server's own
    (labkit.info.workers) unless the server runs one process whatever it says. `base` goes to
    labkit.info.base (server_name=, graceful_s=)."""
    workers = infos.workers(base.get("server_name")) if workers is None else workers
    threads = worker.sync_threads
    capacity = {
        "hello": None,
        # `def` handlers: the thread pool, per worker, or a thread per request
        "sync": None if threads is None else workers * threads,
        "async": None,  # awaiting holds nothing
        "blocking": workers,  # a blocking sleep holds the whole event loop of its worker
        "executor": workers * worker.executor_threads,
        "gather": None,
        "sequential": None,
        "cpu": workers,  # inline CPU work holds the event loop too
        "cpu-pool": workers * worker.pool_processes,
        "upstream": None,  # aiohttp without a connection cap
        "upstream-seq": None,
        "db": workers * worker.db.size,  # a request holds one of asyncpg's connections
        # the sync driver holds the event loop, like /blocking; or it is /db
        "db-blocking": workers * (1 if worker.db_blocking is not None else worker.db.size),
        "db-rows": workers * worker.db.size,
    }
    return {
        **infos.base(framework, **base),
        "workers": workers,
        "threads": worker.sync_threads,
        "executor_threads": worker.executor_threads,
        "pool_processes": worker.pool_processes,
        "database": db.info(worker.db, worker.db_blocking),
        "capacity": infos.check_capacity(capacity),
    }


Params = dict[str, int]
Handler = Callable[[Worker, Params, "str | None"], Awaitable[Body]]


async def _hello(w: Worker, p: Params, rid: str | None) -> Body:
    return endpoints.hello()


async def _async(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.wait(**p)


async def _blocking(w: Worker, p: Params, rid: str | None) -> Body:
    return endpoints.blocking(**p)  # on the loop: stops it, on purpose


async def _executor(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.executor(**p)


async def _gather(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.gather(**p)


async def _sequential(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.sequential(**p)


async def _cpu(w: Worker, p: Params, rid: str | None) -> Body:
    return endpoints.cpu(**p)  # on the loop: holds it, on purpose


async def _cpu_pool(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.cpu_pool(w.pool, **p)


async def _upstream(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.upstream(w.session, rid=rid, **p)


async def _upstream_seq(w: Worker, p: Params, rid: str | None) -> Body:
    return await endpoints.upstream_seq(w.session, rid=rid, **p)


async def _db(w: Worker, p: Params, rid: str | None) -> Body:
    return await db.sleep(w.db, **p)


async def _db_blocking(w: Worker, p: Params, rid: str | None) -> Body:
    pool = w.db_blocking or w.db  # no blocking pool: the framework's own sync pool is /db's
    return db.sleep_sync(pool, **p, endpoint="db-blocking")  # on the loop, on purpose


async def _db_rows(w: Worker, p: Params, rid: str | None) -> Body:
    return await db.rows(w.db, **p)


async def _health(w: Worker, p: Params, rid: str | None) -> Body:
    return endpoints.health()


ENDPOINTS: dict[str, Handler] = {
    "hello": _hello,
    "async": _async,
    "blocking": _blocking,
    "executor": _executor,
    "gather": _gather,
    "sequential": _sequential,
    "cpu": _cpu,
    "cpu-pool": _cpu_pool,
    "upstream": _upstream,
    "upstream-seq": _upstream_seq,
    "db": _db,
    "db-blocking": _db_blocking,
    "db-rows": _db_rows,
    "health": _health,
}
