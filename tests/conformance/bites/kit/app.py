"""An honest, strict-contract (v1.2) target for tests/conformance/test_suite_bites.py, and the
liars made from it: LAB_LIES (comma-separated) plants lies, each a one-line change the
conformance suite must catch. Never discovered (no target.toml). Run: uvicorn app:app --workers W
--timeout-graceful-shutdown 2; WORKERS and GRACEFUL_TIMEOUT_S say the same to /info.

Lies: pool-8x (/cpu-pool claims 8x its processes), cpu-unbounded (inline /cpu claims null
while it holds the loop), upstream-sleep (/upstream sleeps instead of calling), float-ms
(reads ms=1.0), last-repeat (takes the last of repeated params), head-200 (answers HEAD as
GET), no-cap (no total-wait cap), plain-404 (a text 404), ignore-sigterm (ignores SIGTERM),
refusal-in-executor (every 4xx first makes a trip through the loop's default executor, which
/executor fills: Django logs each one that way);
the database's: db-pool-1 (opens one connection for /db, claims DB_POOL or 10), db-new-conn
(/db opens a connection per request), db-sleep (/db sleeps in-process, no query), db-rows-formula
(/db-rows computes its checksum from the rows' formula, not the table);
/info's collector: collector-frozen (its counts never move), collector-unsquared (states its
pauses' sum as their sum of squares), collector-wall (states the time
since its start as the collector's, more than its CPU).

The database as the async targets use it, with psycopg alone (the kit needs no pool library):
`pool` async connections for /db and /db-rows, `BLOCKING_POOL` sync ones that /db-blocking
uses on the event loop (the anti-pattern), each handed out through a queue, all opened when the
worker starts and named 'lab kit {pid}' (LAB_TARGET overrides kit)."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import time
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import anyio.to_thread
import psutil
import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

from lab.contract import Endpoint, load
from lab.proc.database import random_number
from labkit import collector, knobs, pool
from labkit.work import fnv1a

CONTRACT = load()
BY_PATH = {e.path: e for e in CONTRACT.endpoints}
GRAMMAR = re.compile(CONTRACT.integer_pattern)
LIES = set(filter(None, os.environ.get("LAB_LIES", "").split(",")))
ID_HEADER = "X-Lab-Request-Id"
EXECUTOR_THREADS = 4
DB = CONTRACT.database
DB_DEFAULT_POOL = 10  # asyncpg's create_pool default, as the async targets have it
BLOCKING_POOL = 4  # psycopg_pool's default, as the async targets' /db-blocking has it
SLEEP_SQL = "SELECT pg_sleep(%s)"
ROWS_SQL = "SELECT id, randomnumber FROM world WHERE id = %s"


class Bad(Exception):
    def __init__(self, param: str, message: str) -> None:
        self.body = {"error": message, "param": param}


class DatabaseDown(Exception):
    """No database to answer with: the endpoint answers 503."""


class Worker:
    pool: ProcessPoolExecutor
    session: aiohttp.ClientSession
    db: asyncio.Queue[psycopg.AsyncConnection[Any]]
    db_blocking: queue.Queue[psycopg.Connection[Any]]
    db_slots: asyncio.Semaphore  # the pool's size, for the lies that bypass the pool
    db_error = ""  # why there are no connections


worker = Worker()


def db_pool() -> int:
    return int(os.environ.get(DB["pool-env"]) or DB_DEFAULT_POOL)


def db_connect_args() -> dict[str, Any]:
    target = os.environ.get("LAB_TARGET", "kit")
    name = DB["application-name"].format(target=target, pid=os.getpid())
    return {"autocommit": True, "application_name": name, "connect_timeout": 2}


async def open_db() -> None:
    """The worker's connections, opened as it starts; a database that is not there leaves
    the reason in worker.db_error (the server starts anyway)."""
    worker.db, worker.db_blocking = asyncio.Queue(), queue.Queue()
    worker.db_slots = asyncio.Semaphore(db_pool())
    url = os.environ.get(DB["url-env"])
    if not url:
        worker.db_error = f"{DB['url-env']} is not set"
        return
    try:
        for _ in range(1 if "db-pool-1" in LIES else db_pool()):
            worker.db.put_nowait(await psycopg.AsyncConnection.connect(url, **db_connect_args()))
        for _ in range(BLOCKING_POOL):
            worker.db_blocking.put_nowait(psycopg.connect(url, **db_connect_args()))
    except psycopg.Error as exc:
        worker.db_error = str(exc).strip().splitlines()[0]


async def close_db() -> None:
    while not worker.db.empty():
        await worker.db.get_nowait().close()
    while not worker.db_blocking.empty():
        worker.db_blocking.get_nowait().close()


@asynccontextmanager
async def pooled() -> AsyncIterator[Any]:
    """A pooled connection (at most timeout-s to get one), put back afterwards."""
    if worker.db_error:
        raise DatabaseDown(worker.db_error)
    try:
        conn = await asyncio.wait_for(worker.db.get(), DB["timeout-s"])
    except TimeoutError:
        raise DatabaseDown(f"no pooled connection within {DB['timeout-s']} s") from None
    try:
        yield conn
    finally:
        worker.db.put_nowait(conn)


async def db_query(sql: str, value: float | int) -> tuple[Any, ...] | None:
    """One query on a pooled connection."""
    async with pooled() as conn:
        return await (await conn.execute(sql, [value])).fetchone()


async def db_rows(ids: list[int]) -> int:
    """The rows one after another on one pooled connection; the sum of their randomnumber."""
    async with pooled() as conn:
        total = 0
        for i in ids:
            row = await (await conn.execute(ROWS_SQL, [i])).fetchone()
            total += row[1]
        return total


async def db_wait(s: float) -> None:
    if "db-sleep" in LIES:  # the same capacity, and no query
        async with worker.db_slots:
            await asyncio.sleep(s)
    elif "db-new-conn" in LIES:  # the same capacity, a fresh connection each time
        async with worker.db_slots:
            url = os.environ.get(DB["url-env"], "")
            async with await psycopg.AsyncConnection.connect(url, **db_connect_args()) as conn:
                await conn.execute(SLEEP_SQL, [s])
    else:
        await db_query(SLEEP_SQL, s)


def db_wait_blocking(s: float) -> None:
    """The sync driver inside the async handler: the loop waits with the query."""
    if worker.db_error:
        raise DatabaseDown(worker.db_error)
    try:
        conn = worker.db_blocking.get(timeout=DB["timeout-s"])
    except queue.Empty:
        raise DatabaseDown(f"no pooled connection within {DB['timeout-s']} s") from None
    try:
        conn.execute(SLEEP_SQL, [s])
    finally:
        worker.db_blocking.put_nowait(conn)


def parse(endpoint: Endpoint, request: Request) -> dict[str, int]:
    values = {}
    for p in endpoint.params:
        raws = request.query_params.getlist(p.name)
        if not raws:
            values[p.name] = p.default
            continue
        if len(raws) > 1 and "last-repeat" not in LIES:
            raise Bad(p.name, CONTRACT.error("repeated", name=p.name))
        raw = raws[-1]
        if "float-ms" in LIES and p.name == "ms" and re.fullmatch(r"[0-9]+\.[0-9]+", raw):
            raw = str(int(float(raw)))
        if not GRAMMAR.fullmatch(raw):
            raise Bad(p.name, CONTRACT.error("grammar", name=p.name))
        value = int(raw)
        if not p.minimum <= value <= p.maximum:
            raise Bad(
                p.name, CONTRACT.error("bounds", name=p.name, minimum=p.minimum, maximum=p.maximum)
            )
        values[p.name] = value
    if endpoint.over_cap(values) and "no-cap" not in LIES:
        errors = CONTRACT.extensions["errors"]
        raise Bad(
            errors["max-service-param"],
            CONTRACT.error("max-service", max_service_ms=endpoint.max_service_ms),
        )
    return values


async def call_upstream(ms: int, request_id: str | None) -> int:
    url = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001") + f"/delay?ms={ms}"
    headers = {ID_HEADER: request_id} if request_id else {}
    async with worker.session.get(url, headers=headers) as response:
        await response.read()
        return response.status


def info() -> dict[str, Any]:
    w = knobs.workers()
    processes = knobs.pool_processes()
    threads = int(anyio.to_thread.current_default_thread_limiter().total_tokens)
    capacity = {
        "hello": None,
        "sync": w * threads,
        "async": None,
        "blocking": w,
        "executor": w * EXECUTOR_THREADS,
        "gather": None,
        "sequential": None,
        "cpu": None if "cpu-unbounded" in LIES else w,
        "cpu-pool": w * processes * (8 if "pool-8x" in LIES else 1),
        "upstream": None,
        "upstream-seq": None,
        "db": w * db_pool(),
        "db-blocking": w,
        "db-rows": w * db_pool(),
    }
    return {
        "target": "kit",
        "profile": "bites",
        "framework": "starlette",
        "framework_version": "0",
        "server": "uvicorn",
        "server_version": "0",
        "language": "python",
        "language_version": "3",
        "workers": w,
        "threads": threads,
        "executor_threads": EXECUTOR_THREADS,
        "pool_processes": processes,
        "cpus": knobs.cpus(),
        "capacity": capacity,
        "database": {
            "driver": "psycopg (async, a queue of connections)",
            "driver_version": psycopg.__version__,
            "pool": db_pool(),
            "pool_source": "DB_POOL" if os.environ.get(DB["pool-env"]) else "default",
            "blocking_driver": "psycopg",
            "blocking_pool": BLOCKING_POOL,
            "blocking": "event loop",
        },
        "graceful_timeout_s": float(os.environ.get("GRACEFUL_TIMEOUT_S", "2")),
        "collector": collector_totals(),
    }


collector.install()


def collector_totals() -> dict[str, Any]:
    """labkit's timer, honestly; or frozen at the start (collector-frozen), or the wall time
    since the process started, more than the CPU it used once it has idled (collector-wall)."""
    totals = collector.totals()
    if "collector-frozen" in LIES:
        return {"collections": [0, 0, 0], "seconds": 0.0, "seconds_squared": 0.0}
    if "collector-wall" in LIES:
        totals["seconds"] = round(time.time() - psutil.Process().create_time(), 6)
    if "collector-unsquared" in LIES:
        totals["seconds_squared"] = totals["seconds"]
    return totals


async def handle(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    v = parse(endpoint, request)
    s = v.get("ms", 0) / 1000
    match endpoint.name:
        case "hello":
            return {"message": "hello, world"}
        case "health":
            return {"status": "ok"}
        case "info":
            return info()
        case "sync":
            await anyio.to_thread.run_sync(time.sleep, s)
        case "async":
            await asyncio.sleep(s)
        case "blocking":
            time.sleep(s)
        case "executor":
            await asyncio.get_running_loop().run_in_executor(None, time.sleep, s)
        case "gather":
            await asyncio.gather(*(asyncio.sleep(s) for _ in range(v["n"])))
        case "sequential":
            for _ in range(v["n"]):
                await asyncio.sleep(s)
        case "cpu":
            return {**v, "result": fnv1a(v["n"])}
        case "cpu-pool":
            loop = asyncio.get_running_loop()
            return {**v, "result": await loop.run_in_executor(worker.pool, fnv1a, v["n"])}
        case "upstream" | "upstream-seq":
            rid = request.headers.get(ID_HEADER)
            if "upstream-sleep" in LIES:
                await asyncio.sleep(s)
                statuses = [200] * v["n"]
            elif endpoint.name == "upstream":
                statuses = list(
                    await asyncio.gather(*(call_upstream(v["ms"], rid) for _ in range(v["n"])))
                )
            else:
                statuses = [await call_upstream(v["ms"], rid) for _ in range(v["n"])]
            return {**v, "statuses": statuses}
        case "db":
            await db_wait(s)
        case "db-blocking":
            db_wait_blocking(s)
        case "db-rows":
            ids = [random_number(k, v["seed"]) for k in range(1, v["n"] + 1)]
            if "db-rows-formula" in LIES:
                checksum = sum(random_number(i) for i in ids)
            else:
                checksum = await db_rows(ids)
            return {**v, "checksum": checksum}
    return v


async def lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            loop = asyncio.get_running_loop()
            loop.set_default_executor(ThreadPoolExecutor(EXECUTOR_THREADS))
            worker.pool = pool.start(knobs.pool_processes())
            worker.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            await open_db()
            if "ignore-sigterm" in LIES:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await worker.session.close()
            await close_db()
            pool.stop(worker.pool)
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    path, method = scope["path"], scope["method"]
    endpoint = BY_PATH.get(path)
    errors = CONTRACT.extensions["errors"]
    if endpoint is None and "plain-404" in LIES:
        response = PlainTextResponse("Not Found", 404)
    elif endpoint is None:
        response = JSONResponse({"error": errors["not-found"], "path": path}, 404)
    elif method != "GET" and not (method == "HEAD" and "head-200" in LIES):
        body = {"error": errors["method-not-allowed"], "method": method}
        response = JSONResponse(body, 405, headers={"Allow": "GET"})
    else:
        try:
            body = await handle(endpoint, Request(scope, receive))
            response = JSONResponse({"endpoint": endpoint.name, "pid": os.getpid(), **body})
        except Bad as bad:
            response = JSONResponse(bad.body, 400)
        except (DatabaseDown, psycopg.Error, TimeoutError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            response = JSONResponse({"error": CONTRACT.error("database", reason=reason)}, 503)
    if "refusal-in-executor" in LIES and 400 <= response.status_code < 500:
        await asyncio.get_running_loop().run_in_executor(None, lambda: None)
    await response(scope, receive, send)
