"""labkit.db without a database: /db-rows's row picker against the contract's vectors, the
pools' default sizes as the libraries have them, DB_POOL, the connections' names and
settings, the 503s of a worker whose database is unset or refuses it, and /info's database
object and capacities for each worker model. Against a real server: tests/conformance."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from lab.contract import load
from lab.proc import server
from lab.proc.database import random_number
from labkit import db, eventloop, knobs, threaded

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

CONTRACT = load()


@pytest.fixture
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("DB_POOL", raising=False)
    monkeypatch.delenv("LAB_TARGET", raising=False)


# --- /db-rows's rows --------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "seed", "ids", "checksum"), CONTRACT.db_vectors())
def test_db_rows_vectors(n: int, seed: int, ids: list[int], checksum: int) -> None:
    picked = [db.world_id(seed, k) for k in range(1, n + 1)]
    assert picked[: len(ids)] == ids
    assert sum(random_number(i) for i in picked) == checksum  # the world table's rows


def test_world_id_is_the_tables_formula() -> None:
    """The kit's copy of SplitMix64 (the kit does not import the runner's lab.proc) is
    lab.proc.database.random_number with the request's seed, over the whole seed range."""
    for seed in (0, 1, 2, 77, 123456, 999999):
        for k in (1, 2, 3, 250, 499, 500):
            assert db.world_id(seed, k) == random_number(k, seed)
            assert 1 <= db.world_id(seed, k) <= db.WORLD_ROWS


# --- sizes, names, settings -------------------------------------------------------------------


def test_default_sizes_are_the_libraries() -> None:
    """What README's pools table says, read from the libraries' own signatures."""
    assert db.asyncpg_default() == 10
    assert db.psycopg_pool_default() == 4


def test_a_default_that_is_no_fixed_size_is_refused() -> None:
    def elastic(min_size: int = 2, max_size: int = 8) -> None: ...

    def fixed(min_size: int = 4, max_size: int | None = None) -> None: ...

    assert db._default(fixed, "min_size", "max_size") == 4
    with pytest.raises(RuntimeError, match="min_size 2 != max_size 8"):
        db._default(elastic, "min_size", "max_size")


@pytest.mark.parametrize(("raw", "size"), [(None, None), ("", None), ("3", 3), (" 25 ", 25)])
def test_db_pool_knob(monkeypatch: pytest.MonkeyPatch, raw: str | None, size: int | None) -> None:
    if raw is None:
        monkeypatch.delenv("DB_POOL", raising=False)
    else:
        monkeypatch.setenv("DB_POOL", raw)
    assert knobs.db_pool() == size
    assert db.sizes(size) == ({} if size is None else {"min_size": size, "max_size": size})
    assert db.source(size) == ("default" if size is None else "DB_POOL")


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "1.5"])
def test_db_pool_knob_refuses(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("DB_POOL", raw)
    with pytest.raises(ValueError):
        knobs.db_pool()


def test_the_knobs_are_the_contracts() -> None:
    assert CONTRACT.database["pool-env"] == "DB_POOL"  # knobs.db_pool reads it
    assert db.URL_ENV == "DATABASE_URL"
    assert db.TIMEOUT_S == 15


def test_application_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_TARGET", raising=False)
    assert db.application_name("flask") == f"lab flask {os.getpid()}"
    monkeypatch.setenv("LAB_TARGET", "mine")
    assert db.application_name("flask") == f"lab mine {os.getpid()}"


def test_psycopg_settings_keep_the_urls_options() -> None:
    plain = db.psycopg_kwargs("postgresql://u@127.0.0.1:5/d", "lab x 1")
    assert plain == {
        "autocommit": True,
        "application_name": "lab x 1",
        "connect_timeout": 2,
        "options": "-c statement_timeout=15000",
    }
    theirs = db.psycopg_kwargs("host=127.0.0.1 options='-c search_path=lab'", "lab x 1")
    assert theirs["options"] == "-c search_path=lab -c statement_timeout=15000"


def test_connect_params_for_a_framework_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django's DATABASES: the URL's libpq parameters with every connection's settings, the
    autocommit left to the framework; nothing without DATABASE_URL; the pool's options."""
    monkeypatch.setenv("LAB_TARGET", "django")
    monkeypatch.delenv("DB_POOL", raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:pw@127.0.0.1:5/d")
    assert db.connect_params("django") == {
        "user": "u",
        "password": "pw",
        "host": "127.0.0.1",
        "port": "5",
        "dbname": "d",
        "application_name": f"lab django {os.getpid()}",
        "connect_timeout": 2,
        "options": "-c statement_timeout=15000",
    }
    assert db.pool_options() == {"timeout": 15.0}  # psycopg_pool's own sizes
    monkeypatch.setenv("DB_POOL", "3")
    assert db.pool_options() == {"min_size": 3, "max_size": 3, "timeout": 15.0}
    monkeypatch.setenv("DATABASE_URL", "")
    assert db.connect_params("django") == {}


def test_database_error_is_the_contracts_503() -> None:
    error = db.DatabaseError("no pooled connection within 15 s")
    assert error.status == 503
    assert error.body() == {"error": "database: no pooled connection within 15 s"}
    assert error.body()["error"] == CONTRACT.error("database", reason=error.reason)


def test_reason_is_one_line() -> None:
    assert db.reason(OSError("connection failed:\n  detail\n")) == "connection failed:"
    assert db.reason(TimeoutError()) == "TimeoutError"


# --- no database: the worker starts, the endpoints answer 503 at once --------------------------


@pytest.mark.usefixtures("no_database")
def test_unset_url_sync() -> None:
    pool = db.open_sync("flask")
    assert (pool.handle, pool.error) == (None, "DATABASE_URL is not set")
    assert (pool.size, pool.source) == (4, "default")
    for call in (lambda: db.sleep_sync(pool, 10, "db"), lambda: db.rows_sync(pool, 5, 1)):
        with pytest.raises(db.DatabaseError) as caught:
            call()
        assert caught.value.body() == {"error": "database: DATABASE_URL is not set"}
    db.close_sync(pool)  # nothing to close: no error either


@pytest.mark.usefixtures("no_database")
def test_unset_url_async(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_POOL", "3")

    async def run() -> tuple[db.AsyncPool, db.SyncPool, list[str]]:
        main, blocking = await db.open_async("fastapi")
        errors = []
        for call in (db.sleep(main, 10), db.rows(main, 5, 1)):
            with pytest.raises(db.DatabaseError) as caught:
                await call
            errors.append(caught.value.reason)
        await db.close_async(main, blocking)
        return main, blocking, errors

    main, blocking, errors = asyncio.run(run())
    assert errors == ["DATABASE_URL is not set"] * 2
    assert (main.size, main.source, blocking.size, blocking.source) == (3, "DB_POOL", 3, "DB_POOL")
    with pytest.raises(db.DatabaseError, match="DATABASE_URL is not set"):
        db.sleep_sync(blocking, 10, "db-blocking")


@pytest.mark.usefixtures("no_database")
def test_a_frameworks_own_pool_is_named_and_never_made_without_a_url() -> None:
    made = []
    driver = ("django.db.backends.postgresql + psycopg_pool", "5.2")
    pool = db.open_sync("django", pool=made.append, driver=driver)  # type: ignore[arg-type]
    assert made == []  # DATABASE_URL unset: the framework's pool is not even made
    assert (pool.driver, pool.version, pool.size, pool.error) == (
        *driver,
        4,
        "DATABASE_URL is not set",
    )
    assert db.info(pool)["blocking"] == "same as /db"


def refused_url() -> str:
    return f"postgresql://postgres@127.0.0.1:{server.free_port()}/postgres"  # nothing listens


@pytest.mark.usefixtures("no_database")
def test_refused_async(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", refused_url())
    started = time.monotonic()
    main, blocking = asyncio.run(db.open_async("fastapi"))
    assert time.monotonic() - started < db.CONNECT_TIMEOUT_S
    assert main.handle is None and blocking.handle is None
    assert main.error is not None and main.error.startswith("could not connect: "), main.error
    assert blocking.error == main.error  # not tried again: the server is not there
    assert (main.size, blocking.size) == (10, 4)  # what the pools would have had


@pytest.mark.usefixtures("no_database")
@pytest.mark.parametrize("own", [False, True], ids=["kit's pool", "framework's pool"])
def test_refused_sync(monkeypatch: pytest.MonkeyPatch, own: bool) -> None:
    url = refused_url()
    monkeypatch.setenv("DATABASE_URL", url)
    made: list[str] = []
    started = time.monotonic()
    pool = db.open_sync("flask", pool=made.append if own else None)  # type: ignore[arg-type]
    assert made == []  # the probe failed first: a framework's pool is not made either
    took = time.monotonic() - started
    assert took < db.CONNECT_TIMEOUT_S + 1.5, took  # the pool's wait, then one plain attempt
    assert pool.handle is None
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert pool.error is not None and port in pool.error and "refused" in pool.error, pool.error


# --- /info: the database object and the capacities --------------------------------------------


def pool(size: int, *, sync: bool, source: str = "default") -> db.Pool[Any]:
    driver = db.PSYCOPG if sync else db.ASYNCPG
    return db.Pool(driver, "1.0", size, source, handle=None, error="not opened in a unit test")


def threaded_worker(workers: int, threads: int | None, size: int) -> threaded.Worker:
    return threaded.Worker(
        workers=workers,
        threads=threads,
        executor_threads=6,
        pool_processes=2,
        pool=None,  # type: ignore[arg-type]
        client=None,  # type: ignore[arg-type]
        fan_out=None,  # type: ignore[arg-type]
        db=pool(size, sync=True),
        graceful_s=3.0,
    )


@pytest.mark.parametrize(
    ("workers", "threads", "size", "capacity"),
    [
        (2, 1, 4, 2),  # gunicorn sync workers: one request per worker, whatever the pool
        (1, 4, 4, 4),  # gthread / granian: min(T, D) per worker
        (2, 4, 3, 6),
        (2, 8, 4, 8),
        (1, None, 4, 4),  # the dev server, a thread per request: the pool
        (1, None, 25, 25),
    ],
)
def test_threaded_capacity(workers: int, threads: int | None, size: int, capacity: int) -> None:
    body = threaded.info("flask", threaded_worker(workers, threads, size), server_name="gunicorn")
    for name in ("db", "db-blocking", "db-rows"):
        assert body["capacity"][name] == capacity, name
    assert body["database"] == {
        "driver": db.PSYCOPG,
        "driver_version": "1.0",
        "pool": size,
        "pool_source": "default",
        "blocking_driver": db.PSYCOPG,
        "blocking_pool": size,
        "blocking": "same as /db",
    }


@pytest.mark.parametrize(
    ("threads", "executor", "capacity"),
    [
        (1, 6, 2),  # gunicorn sync workers: one request per worker
        (4, 6, 8),  # gthread: the request threads
        (8, 6, 12),  # more threads than the shared executor: E per worker
        (None, 6, 12),  # a thread per request: the shared executor
    ],
)
def test_threaded_shared_executor(threads: int | None, executor: int, capacity: int) -> None:
    """Django under WSGI: /executor hands its work to one pool per worker (E threads)."""
    worker = dataclasses.replace(
        threaded_worker(2, threads, 4),
        executor_threads=executor,
        executor=ThreadPoolExecutor(executor),
    )
    body = threaded.info("django", worker, server_name="gunicorn")
    assert body["capacity"]["executor"] == capacity
    per_request = threaded.info("flask", threaded_worker(2, threads, 4), server_name="gunicorn")
    assert per_request["capacity"]["executor"] == (None if threads is None else 2 * threads)
    assert worker.executor is not None
    worker.executor.shutdown()


def test_eventloop_thread_per_def_view_and_its_own_sync_pool() -> None:
    """Django under ASGI: a thread per `def` view (sync_threads None), /db through the
    framework's own sync pool, so /db-blocking is /db."""
    worker = eventloop.Worker(
        executor_threads=6,
        sync_threads=None,
        pool_processes=2,
        pool=None,  # type: ignore[arg-type]
        session=None,  # type: ignore[arg-type]
        db=pool(4, sync=True),
        db_blocking=None,
    )
    body = eventloop.info("django", worker, workers=2, server_name="uvicorn")
    assert body["threads"] is None
    capacity = body["capacity"]
    assert (capacity["sync"], capacity["blocking"], capacity["executor"]) == (None, 2, 12)
    assert capacity["db"] == capacity["db-blocking"] == capacity["db-rows"] == 8
    assert body["database"]["blocking"] == "same as /db"


@pytest.mark.parametrize(("workers", "size"), [(1, 10), (2, 10), (3, 4)])
def test_eventloop_capacity(workers: int, size: int) -> None:
    worker = eventloop.Worker(
        executor_threads=6,
        sync_threads=40,
        pool_processes=2,
        pool=None,  # type: ignore[arg-type]
        session=None,  # type: ignore[arg-type]
        db=pool(size, sync=False, source="DB_POOL"),
        db_blocking=pool(4, sync=True),
    )
    body = eventloop.info("fastapi", worker, workers=workers, server_name="uvicorn")
    assert body["capacity"]["db"] == body["capacity"]["db-rows"] == workers * size
    assert body["capacity"]["db-blocking"] == workers  # the loop, like /blocking
    assert body["database"] == {
        "driver": db.ASYNCPG,
        "driver_version": "1.0",
        "pool": size,
        "pool_source": "DB_POOL",
        "blocking_driver": db.PSYCOPG,
        "blocking_pool": 4,
        "blocking": "event loop",
    }


def test_every_database_endpoint_has_a_coroutine() -> None:
    names = {e.name for e in CONTRACT.endpoints if e.kind == "db"}
    assert names == {"db", "db-blocking", "db-rows"}
    assert names <= set(eventloop.ENDPOINTS)
