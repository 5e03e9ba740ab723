"""The database endpoints (/db, /db-blocking, /db-rows): each worker's pools, the queries, and
/info's "database" object (CONTRACT.md, "The database").

    main, blocking = await open_async(framework)   # an event-loop worker (eventloop.serving)
    await sleep(main, ms)                          # /db, asyncpg
    sleep_sync(blocking, ms, "db-blocking")        # psycopg inside `async def`: blocks the loop
    await rows(main, n, seed)                      # /db-rows
    await close_async(main, blocking)

    pool = open_sync(framework)                    # a thread-per-request worker (threaded.start)
    sleep_sync(pool, ms, "db"), rows_sync(pool, n, seed); close_sync(pool)

    settings = connect_params(framework)           # a framework with a database layer of its
    pool = open_sync(framework, pool=..., driver=...)  # own (Django): its psycopg_pool, opened
                                                   # and probed here like the kit's

The drivers the frameworks' users reach for, at their libraries' own default pool sizes
unless DB_POOL sets them (min = max): asyncpg's `create_pool` (10) for async handlers;
psycopg 3 with psycopg_pool's `ConnectionPool` (4) for sync ones, and for /db-blocking on an
event loop (the anti-pattern: a sync driver called in an `async def`).

A worker opens its pools as it starts, as users' start-up code does (each pool connects its
minimum, here all of it), and never fails to start for the database: DATABASE_URL unset, or a
server that does not answer within CONNECT_TIMEOUT_S, leaves the reason in the Pool, and the
endpoints answer it as 503 at once. Every failure of a database endpoint is DatabaseError
(503, x-lab.errors.database); waits are bounded by the contract's timeout-s (15 s) for a
pooled connection and for each query."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import asyncpg
import psycopg
import psycopg_pool
from psycopg import conninfo

from lab.contract import load
from labkit import knobs
from labkit.endpoints import Body, body
from labkit.errors import LabError

CONTRACT = load()
DB = CONTRACT.database
URL_ENV: str = DB["url-env"]  # DATABASE_URL
TIMEOUT_S = float(DB["timeout-s"])  # a pooled connection, or a query's answer
# One connection attempt (libpq's connect_timeout is whole seconds, at least 2): an
# unreachable server answers 503 within seconds, not after the drivers' 60 s (asyncpg) or
# 130 s (the kernel's SYN retries under libpq's default).
CONNECT_TIMEOUT_S = 2
CLOSE_S = 0.5  # for a pool's graceful close at shutdown, then its connections are cut

WORLD_ROWS = 10_000
SLEEP_SQL = "SELECT pg_sleep($1)"  # asyncpg's placeholders
ROW_SQL = "SELECT id, randomnumber FROM world WHERE id = $1"
SLEEP_SQL_SYNC = "SELECT pg_sleep(%s)"  # psycopg's
ROW_SQL_SYNC = "SELECT id, randomnumber FROM world WHERE id = %s"

ASYNCPG = "asyncpg"
PSYCOPG = "psycopg + psycopg_pool"
# What a database failure raises, besides DatabaseError itself. TimeoutError is an OSError:
# handlers test it first, to name what was waited for.
FAILURES: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    psycopg.Error,
    OSError,
)

H = TypeVar("H")


class DatabaseError(LabError):
    """A database endpoint's failure: 503 {"error": "database: <reason>"}."""

    status = 503

    def __init__(self, reason: str) -> None:
        super().__init__(CONTRACT.error("database", reason=reason))
        self.reason = reason


def reason(exc: BaseException) -> str:
    """One line for a 503: the exception's first line, or its class when it has no text."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


@dataclass(frozen=True)
class Pool(Generic[H]):
    """One pool of the worker, or why it has none (`error`, the 503's reason)."""

    driver: str
    version: str
    size: int  # connections, the pool's maximum (the library's, or DB_POOL)
    source: str  # "default" | "DB_POOL"
    handle: H | None
    error: str | None = None

    def ready(self) -> H:
        if self.handle is None:
            raise DatabaseError(self.error or "no pool")
        return self.handle


AsyncPool = Pool[asyncpg.Pool]
SyncPool = Pool[psycopg_pool.ConnectionPool]


# --- the sizes: the libraries' own defaults, or DB_POOL ---------------------------------------


def _default(function: Any, low: str, high: str) -> int:
    """A pool's default size as the library's signature has it (minimum; the maximum
    defaults to it, or None: the same)."""
    params = inspect.signature(function).parameters
    minimum, maximum = params[low].default, params[high].default
    if maximum not in (None, minimum):
        raise RuntimeError(f"{function.__qualname__}: default {low} {minimum} != {high} {maximum}")
    return int(minimum)


def asyncpg_default() -> int:
    return _default(asyncpg.create_pool, "min_size", "max_size")  # 10 in asyncpg 0.32


def psycopg_pool_default() -> int:
    return _default(psycopg_pool.ConnectionPool.__init__, "min_size", "max_size")  # 4


def sizes(size: int | None) -> dict[str, int]:
    """The pool's size arguments: none for the library's default, else min = max = DB_POOL."""
    return {} if size is None else {"min_size": size, "max_size": size}


def source(size: int | None) -> str:
    return "default" if size is None else "DB_POOL"


def application_name(framework: str) -> str:
    """'lab {target} {pid}' (x-lab.database): whose connections these are, in pg_stat_activity."""
    target = os.environ.get("LAB_TARGET", framework)
    return str(DB["application-name"]).format(target=target, pid=os.getpid())


def database_url() -> str | None:
    return os.environ.get(URL_ENV, "").strip() or None


# --- opening and closing ----------------------------------------------------------------------


async def open_async(framework: str) -> tuple[AsyncPool, SyncPool]:
    """An event-loop worker's pools: asyncpg's for /db and /db-rows, psycopg_pool's for
    /db-blocking. Call it on the worker's loop as it starts serving; it never raises."""
    url, size = database_url(), knobs.db_pool()
    main = await _open_asyncpg(url, size, application_name(framework))
    if main.error is not None:  # the server is not there: the blocking pool would wait for it
        blocking = _unopened(PSYCOPG, _psycopg_version(), size, main.error)
        return main, blocking
    return main, open_sync(framework, url)


async def _open_asyncpg(url: str | None, size: int | None, name: str) -> AsyncPool:
    version = asyncpg.__version__
    if url is None:
        return _unopened(ASYNCPG, version, size, f"{URL_ENV} is not set")
    pool = None
    try:
        pool = asyncpg.create_pool(
            url,
            **sizes(size),
            timeout=CONNECT_TIMEOUT_S,  # each connection attempt (asyncpg.connect's timeout)
            command_timeout=TIMEOUT_S,  # each query; asyncpg cancels it at the server
            server_settings={"application_name": name},
        )
        await pool  # connects min_size connections now, as `await create_pool(...)` does
    except TimeoutError:
        _terminate(pool)
        why = f"no connection within {CONNECT_TIMEOUT_S} s"
        return _unopened(ASYNCPG, version, size, why)
    except Exception as exc:  # whatever it is, the worker serves on and /db says why
        _terminate(pool)
        why = f"could not connect: {reason(exc)}" if isinstance(exc, OSError) else reason(exc)
        return _unopened(ASYNCPG, version, size, why)
    return Pool(ASYNCPG, version, pool.get_max_size(), source(size), pool)


def _terminate(pool: asyncpg.Pool | None) -> None:
    if pool is not None:
        with contextlib.suppress(Exception):  # a pool that never started may refuse
            pool.terminate()  # the connections a failed start opened, if any


def _unopened(driver: str, version: str, size: int | None, error: str) -> Pool[Any]:
    """A pool that could not be opened, at the size it would have had (the library's
    default, or DB_POOL)."""
    default = asyncpg_default() if driver == ASYNCPG else psycopg_pool_default()
    return Pool(driver, version, default if size is None else size, source(size), None, error)


def _psycopg_version() -> str:
    return f"{psycopg.__version__} + {psycopg_pool.__version__}"


def psycopg_kwargs(url: str, name: str) -> dict[str, Any]:
    """Every psycopg connection's settings: autocommit (one statement, no transaction to end,
    as asyncpg does), its application_name, CONNECT_TIMEOUT_S, and the contract's 15 s per
    query as the server's statement_timeout (a sync driver has no client-side timeout), added
    to options the URL may carry."""
    theirs = str(conninfo.conninfo_to_dict(url).get("options") or "")
    timeout = f"-c statement_timeout={int(TIMEOUT_S * 1000)}"
    return {
        "autocommit": True,
        "application_name": name,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "options": f"{theirs} {timeout}".strip(),
    }


def pool_options() -> dict[str, Any]:
    """psycopg_pool.ConnectionPool's sizes (DB_POOL, or the library's default) and its wait
    for a pooled connection (TIMEOUT_S): the kit's own pool's, and a framework's own built on
    psycopg_pool (Django's DATABASES OPTIONS "pool")."""
    return {**sizes(knobs.db_pool()), "timeout": TIMEOUT_S}


def connect_params(framework: str, url: str | None = None) -> dict[str, Any]:
    """DATABASE_URL (or `url`) as libpq keyword parameters (dbname, host, port, user, ...) with
    every connection's settings of psycopg_kwargs (autocommit left to the framework), for a
    framework that configures its database layer with them (Django's DATABASES: NAME and
    OPTIONS); {} when DATABASE_URL is not set."""
    url = url or database_url()
    if url is None:
        return {}
    settings = psycopg_kwargs(url, application_name(framework))
    del settings["autocommit"]
    return {**conninfo.conninfo_to_dict(url), **settings}


def open_sync(
    framework: str,
    url: str | None = None,
    *,
    pool: Callable[[str], psycopg_pool.ConnectionPool] | None = None,
    driver: tuple[str, str] | None = None,
) -> SyncPool:
    """A psycopg_pool ConnectionPool, open and filled (its minimum connected) or, within
    CONNECT_TIMEOUT_S, the reason why not. Never raises. `url` defaults to DATABASE_URL.
    `pool(url)` makes the pool, unopened, where a framework has its own (Django's built-in
    pool, configured with connect_params and pool_options); `driver` then names it (name,
    version) in /info. The kit's own otherwise."""
    url = url or database_url()
    size = knobs.db_pool()
    name, version = driver or (PSYCOPG, _psycopg_version())
    if url is None:
        return _unopened(name, version, size, f"{URL_ENV} is not set")
    # One plain connection first: a refused or unknown server fails it at once, where the
    # pool would wait out its whole timeout (its workers retry in the background).
    why = _connect_problem(url, framework)
    if why is not None:
        return _unopened(name, version, size, why)
    made = None
    try:
        made = (pool or _kit_pool(framework))(url)
        made.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    except psycopg_pool.PoolTimeout:
        # The server answered the probe but is slow to fill the pool: it stays and fills.
        assert made is not None
    except Exception as exc:
        if made is not None:
            made.close(timeout=0)
        return _unopened(name, version, size, reason(exc))
    return Pool(name, version, made.max_size, source(size), made)


def _kit_pool(framework: str) -> Callable[[str], psycopg_pool.ConnectionPool]:
    def make(url: str) -> psycopg_pool.ConnectionPool:
        kwargs = psycopg_kwargs(url, application_name(framework))
        return psycopg_pool.ConnectionPool(url, kwargs=kwargs, **pool_options(), open=False)

    return make


def _connect_problem(url: str, framework: str) -> str | None:
    try:
        psycopg.connect(url, **psycopg_kwargs(url, application_name(framework))).close()
    except psycopg.Error as exc:
        return reason(exc)
    return None


async def close_async(main: AsyncPool, blocking: SyncPool) -> None:
    """Close both pools quickly: the server's graceful timeout has already let requests end,
    so a connection still in use is cut after CLOSE_S (asyncpg's terminate)."""
    if main.handle is not None:
        try:
            await asyncio.wait_for(main.handle.close(), CLOSE_S)
        except (TimeoutError, *FAILURES):
            main.handle.terminate()
    close_sync(blocking)


def close_sync(pool: SyncPool) -> None:
    """Close the pool: idle connections now, one still in use when it comes back; waits at
    most CLOSE_S for the pool's own threads."""
    if pool.handle is not None:
        pool.handle.close(timeout=CLOSE_S)


# --- the queries --------------------------------------------------------------------------------


@asynccontextmanager
async def _connection(pool: AsyncPool) -> AsyncIterator[asyncpg.Connection]:
    """One connection of asyncpg's pool; every failure while it is held becomes DatabaseError."""
    handle = pool.ready()
    try:
        conn = await handle.acquire(timeout=TIMEOUT_S)
    except TimeoutError:
        raise DatabaseError(f"no pooled connection within {TIMEOUT_S:g} s") from None
    except FAILURES as exc:
        raise DatabaseError(reason(exc)) from exc
    try:
        yield conn
    except TimeoutError:
        raise DatabaseError(f"no answer within {TIMEOUT_S:g} s") from None
    except FAILURES as exc:
        raise DatabaseError(reason(exc)) from exc
    finally:
        await handle.release(conn)  # shielded by asyncpg from a cancelled request


@contextmanager
def _connection_sync(pool: SyncPool) -> Iterator[psycopg.Connection[Any]]:
    """One connection of psycopg_pool's pool; every failure while it is held: DatabaseError."""
    handle = pool.ready()
    try:
        conn = handle.getconn()  # waits at most the pool's timeout, TIMEOUT_S
    except psycopg_pool.PoolTimeout:
        raise DatabaseError(f"no pooled connection within {TIMEOUT_S:g} s") from None
    except FAILURES as exc:
        raise DatabaseError(reason(exc)) from exc
    try:
        yield conn
    except FAILURES as exc:  # statement_timeout: "canceling statement due to statement timeout"
        raise DatabaseError(reason(exc)) from exc
    finally:
        handle.putconn(conn)  # a broken connection is discarded and replaced by the pool


def world_id(seed: int, k: int) -> int:
    """The id /db-rows's k-th select reads (k = 1..n): 1 + SplitMix64(seed, k) mod 10000,
    the contract's formula (db-vectors.json), all arithmetic mod 2^64."""
    mask = (1 << 64) - 1
    z = (seed + k * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return 1 + z % WORLD_ROWS


def _number(row: Any, wanted: int) -> int:
    if row is None or row[0] != wanted:
        raise DatabaseError(f"world row {wanted}: got {None if row is None else row[0]}")
    return int(row[1])


async def sleep(pool: AsyncPool, ms: int) -> Body:
    """/db: one query that waits ms inside the database, on a connection of asyncpg's pool."""
    async with _connection(pool) as conn:
        await conn.execute(SLEEP_SQL, ms / 1000.0)
    return body("db", ms=ms)


async def rows(pool: AsyncPool, n: int, seed: int) -> Body:
    """/db-rows: n single-row selects one after another on one connection. asyncpg prepares
    each statement on a connection's first use and caches it (statement_cache_size 100): the
    other selects are one Bind/Execute round trip each."""
    checksum = 0
    async with _connection(pool) as conn:
        for k in range(1, n + 1):
            wanted = world_id(seed, k)
            checksum += _number(await conn.fetchrow(ROW_SQL, wanted), wanted)
    return body("db-rows", n=n, seed=seed, checksum=checksum)


def sleep_sync(pool: SyncPool, ms: int, endpoint: str) -> Body:
    """/db on a thread (or /db-blocking on an event loop, which it holds meanwhile)."""
    with _connection_sync(pool) as conn:
        conn.execute(SLEEP_SQL_SYNC, [ms / 1000.0])
    return body(endpoint, ms=ms)


def rows_sync(pool: SyncPool, n: int, seed: int) -> Body:
    """/db-rows with psycopg. Its default prepare_threshold (5) is kept, as users keep it: a
    query run 5 times on a connection is prepared there and stays prepared, so once a pooled
    connection has served a /db-rows request, its selects are one round trip each, as with
    asyncpg."""
    checksum = 0
    with _connection_sync(pool) as conn:
        for k in range(1, n + 1):
            wanted = world_id(seed, k)
            checksum += _number(conn.execute(ROW_SQL_SYNC, [wanted]).fetchone(), wanted)
    return body("db-rows", n=n, seed=seed, checksum=checksum)


# --- /info ----------------------------------------------------------------------------------------


def info(main: Pool[Any], blocking: Pool[Any] | None = None) -> dict[str, Any]:
    """/info's "database": the pools as they are (their live size, or the one they would have
    had). `blocking`: /db-blocking's pool on an event loop, whose wait holds the loop; None
    where /db-blocking is /db (a thread per request)."""
    same = blocking is None
    blocking = blocking or main
    return {
        "driver": main.driver,
        "driver_version": main.version,
        "pool": main.size,
        "pool_source": main.source,
        "blocking_driver": blocking.driver,
        "blocking_pool": blocking.size,
        "blocking": "same as /db" if same else "event loop",
    }
