"""The database endpoints on every target x profile, against the session's real PostgreSQL
(`database`, every served target's DATABASE_URL): /db-rows answers every test vector and
reads the table as it is now; /db's and /db-blocking's capacity claims are timed and counted
at the database (pg_stat_activity: the server's connections running pg_sleep, and how many
distinct connections it used); DB_POOL sets the pool, and the count follows it. Bodies,
schemas and bad input come with every other endpoint's (test_conformance.py,
test_strict_contract.py); an unreachable database in test_unreachable.py."""

from __future__ import annotations

import pytest
from harness.claims import db_claim_problem, db_rows_problem
from harness.support import get
from harness.targets import TARGETS, Served, start_target
from harness.timed import Timed

from lab import capacities
from lab.contract import Contract, Endpoint, load
from lab.proc import server
from lab.proc.database import Database
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
TIMED = [CONTRACT["db"], CONTRACT["db-blocking"]]
MAX_PROBE = 100  # requests in one batch on a 2-CPU test machine
KNOB_POOL = "3"  # DB_POOL in test_db_pool_knob: below every default, so the count must drop


def test_db_info(served: Served) -> None:
    """Started without DB_POOL: the driver's own default size."""
    database = served.info["database"]
    assert database["pool_source"] == "default", database
    assert database["blocking"] in ("event loop", "same as /db"), database


def test_db_rows_vectors(served: Served, contract: Contract) -> None:
    for n, seed, _, checksum in contract.db_vectors():
        reply = get(served.url, f"/db-rows?n={n}&seed={seed}")
        assert reply.status == 200, reply.body
        assert (reply.body["n"], reply.body["seed"]) == (n, seed), reply.body
        assert reply.body["checksum"] == checksum, f"n={n} seed={seed}: {reply.body}"


def test_db_rows_reads_the_table(served: Served, database: Database) -> None:
    problem = db_rows_problem(served.url, database)
    assert problem is None, problem


# Timed with the other claims that mostly wait, several cases at a time (harness/timed.py).
@pytest.mark.parametrize("endpoint", TIMED, ids=[e.name for e in TIMED])
def test_db_claim(served: Served, endpoint: Endpoint, timed: Timed) -> None:
    capacity = served.info["capacity"][endpoint.name]
    if capacity is not None and capacity + 1 > MAX_PROBE:
        pytest.skip(f"capacity {capacity} needs more than {MAX_PROBE} concurrent requests")
    problem = timed[(served.target.name, served.profile)][endpoint.name]
    assert problem is None, problem


def pool_profile(target: Target) -> str:
    """The target's first profile (the default first) whose /db capacity depends on the pool
    (flask's sync workers serve one request each, whatever the pool)."""
    table = capacities.table()
    order = [target.default_profile, *(p for p in target.profiles if p != target.default_profile)]
    return next(p for p in order if "D" in (table[(target.name, p)]["db"] or ""))


# DB_POOL is read by the kits' shared code: one target per pool library (asyncpg,
# psycopg_pool, pgxpool, node-postgres) proves it; every other target's default pool is
# counted above.
KNOB_TARGETS = [t for t in TARGETS if t.name in ("fastapi", "flask", "gin", "express")]


@pytest.mark.parametrize("target", KNOB_TARGETS, ids=[t.name for t in KNOB_TARGETS])
def test_db_pool_knob(target: Target, upstream: server.ServerProcess, database: Database) -> None:
    """DB_POOL sets the pool (one profile per pool library): /info says so, the capacity follows
    CONTRACT.md's formula, and pg_stat_activity counts that many queries at once."""
    profile = pool_profile(target)
    proc = start_target(
        target,
        profile,
        upstream.url,
        WORKERS="1",
        DATABASE_URL=database.url,
        DB_POOL=KNOB_POOL,
    )
    try:
        info = get(proc.url, "/info").body
        problem = db_claim_problem(proc, target.name, database, CONTRACT["db"], info)
    finally:
        report = proc.stop()
    assert report.clean, report
    where = f"{target.name}/{profile} with DB_POOL={KNOB_POOL} (log {proc.log_path})"
    assert info["database"]["pool"] == int(KNOB_POOL), (where, info["database"])
    assert info["database"]["pool_source"] == "DB_POOL", (where, info["database"])
    formula = capacities.table()[(target.name, profile)]["db"]
    assert info["capacity"]["db"] == capacities.evaluate(formula, info), (where, formula, info)
    assert problem is None, f"{where}: {problem}"
