"""The conformance checks must fail a server that lies. bites/liar (beside this file) is such a
server: it blocks where it claims to be unbounded, answers before its work is done, and serves
more at once than it claims. bites/kit is an honest strict-contract target that passes
every check of conformance v2 (CPU claims, processes, upstream calls, stop under load, the
strict contract's tables and schemathesis) and of the database (claims counted in
pg_stat_activity, /db-rows read from the table); the same app with one lie planted (LAB_LIES)
fails the check made for that lie."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from harness import claims, strict, timed
from harness.support import get
from schemathesis.core.failures import FailureGroup

from lab.contract import load
from lab.proc import server
from lab.proc.database import Database

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
LIAR = Path(__file__).parent / "bites" / "liar"


@pytest.fixture(scope="module")
def liar() -> Iterator[str]:
    port = server.free_port()
    uvicorn = str(Path(sys.executable).parent / "uvicorn")
    proc = server.ServerProcess(
        "liar",
        [uvicorn, "app:app", "--port", str(port), "--log-level", "warning"],
        LIAR,
        {"PATH": str(Path(sys.executable).parent)},
        port,
    ).start()
    yield proc.url
    assert proc.stop().clean


def test_blocking_while_claiming_unbounded_is_caught(liar: str) -> None:
    capacity = get(liar, "/info").body["capacity"]["async"]
    problem = claims.capacity_problem(liar, CONTRACT["async"], capacity)
    assert problem is not None and "should take 1 x" in problem, problem


def test_lies_are_caught_when_timed_together(liar: str) -> None:
    """The suite times a server's unbounded claims at once (claims.capacity_problems): the
    loop that blocks still shows, and so does the pool that serves more than it claims; the
    endpoint that answers before its work, timed beside the blocked loop, is timed again alone
    and ends too early."""
    capacity = get(liar, "/info").body["capacity"]
    claimed = [(CONTRACT[name], capacity[name]) for name in ("async", "gather", "sync")]
    found = claims.capacity_problems(liar, claimed)
    assert "should take 1 x" in (found["async"] or ""), found
    assert "should take 2 x" in (found["sync"] or ""), found
    assert found["gather"] is not None, found


def test_answering_before_the_work_is_done_is_caught(liar: str) -> None:
    problem = claims.single_timing_problem(liar, CONTRACT["gather"])
    assert problem is not None and "before its" in problem, problem


def test_serving_more_than_claimed_is_caught(liar: str) -> None:
    capacity = get(liar, "/info").body["capacity"]["sync"]
    problem = claims.capacity_problem(liar, CONTRACT["sync"], capacity)
    assert problem is not None and "should take 2 x" in problem, problem


# --- conformance v2: each new check fails a copy of an honest target with one lie planted -----

KIT = Path(__file__).parent / "bites" / "kit"
GRACEFUL_S = "2"


def start_kit(  # type: ignore[no-untyped-def]
    upstream_url: str,
    workers: int = 1,
    lies: str = "",
    spread: bool = True,
    database_url: str = "",
    db_pool: str = "",
):
    """The honest strict-contract target (bites/kit beside this file), lies planted. spread=False
    runs one uvicorn process whatever WORKERS says (the 'one process' lie). Without a
    database_url its database endpoints answer 503."""
    port = server.free_port()
    uvicorn = str(Path(sys.executable).parent / "uvicorn")
    command = [uvicorn, "app:app", "--host", server.HOST, "--port", str(port)]
    command += ["--timeout-graceful-shutdown", GRACEFUL_S, "--log-level", "warning"]
    if spread:
        command += ["--workers", str(workers)]
    env = {
        **os.environ,
        "WORKERS": str(workers),
        "UPSTREAM_URL": upstream_url,
        "LAB_LIES": lies,
        "GRACEFUL_TIMEOUT_S": GRACEFUL_S,
        "DATABASE_URL": database_url,
        "DB_POOL": db_pool,
    }
    name = f"kit-{lies or 'honest'}".replace(",", "+")
    return server.ServerProcess(name, command, KIT, env, port).start()


HTTP_LIES = (
    "pool-8x,cpu-unbounded,upstream-sleep,float-ms,last-repeat,head-200,no-cap,plain-404,"
    "collector-frozen"
)


@pytest.fixture(scope="module")
def honest(upstream: server.ServerProcess, database: Database) -> Iterator[server.ServerProcess]:
    proc = start_kit(upstream.url, database_url=database.url)
    yield proc
    assert proc.stop().clean


@pytest.fixture(scope="module")
def kit_liar(upstream: server.ServerProcess) -> Iterator[server.ServerProcess]:
    """Independent lies in one server: each check looks at one endpoint or one rule."""
    proc = start_kit(upstream.url, lies=HTTP_LIES)
    yield proc
    assert proc.stop().clean


def info_of(proc: server.ServerProcess) -> dict[str, Any]:
    return get(proc.url, "/info").body


@pytest.mark.parametrize("endpoint", ["cpu", "cpu-pool"])
def test_honest_cpu_claims_pass(honest: server.ServerProcess, endpoint: str) -> None:
    assert claims.cpu_claim_problem(honest.url, CONTRACT[endpoint], info_of(honest)) is None


def test_pool_claiming_8x_its_processes_is_caught(kit_liar: server.ServerProcess) -> None:
    problem = claims.cpu_claim_problem(kit_liar.url, CONTRACT["cpu-pool"], info_of(kit_liar))
    assert problem is not None and "serves fewer at once than it claims" in problem, problem


def test_inline_cpu_claiming_unbounded_is_caught(kit_liar: server.ServerProcess) -> None:
    problem = claims.cpu_claim_problem(kit_liar.url, CONTRACT["cpu"], info_of(kit_liar))
    assert problem is not None and "serves fewer at once than it claims" in problem, problem


@pytest.mark.parametrize("endpoint", ["upstream", "upstream-seq"])
def test_honest_upstream_calls_pass(
    honest: server.ServerProcess, upstream: server.ServerProcess, endpoint: str
) -> None:
    assert claims.upstream_calls_problem(honest.url, upstream.url, CONTRACT[endpoint]) is None


def test_upstream_that_sleeps_is_caught(
    kit_liar: server.ServerProcess, upstream: server.ServerProcess
) -> None:
    problem = claims.upstream_calls_problem(kit_liar.url, upstream.url, CONTRACT["upstream"])
    assert problem is not None and "made 0 upstream call(s)" in problem, problem


def test_honest_collector_passes(honest: server.ServerProcess) -> None:
    assert claims.collector_problem(honest.url) is None


def test_frozen_collector_is_caught(kit_liar: server.ServerProcess) -> None:
    problem = claims.collector_problem(kit_liar.url)
    assert problem is not None and "counted no young collection" in problem, problem


def test_collector_stating_more_than_its_cpu_is_caught(upstream: server.ServerProcess) -> None:
    proc = start_kit(upstream.url, lies="collector-wall")
    try:
        time.sleep(1.0)  # its wall time since the start outgrows the CPU it used
        problem = claims.collector_problem(proc.url)
    finally:
        assert proc.stop().clean
    assert problem is not None and "more than the process's" in problem, problem


def test_collector_stating_its_pauses_sum_as_their_squares_is_caught(
    upstream: server.ServerProcess,
) -> None:
    proc = start_kit(upstream.url, lies="collector-unsquared")
    try:
        problem = claims.collector_problem(proc.url)
    finally:
        assert proc.stop().clean
    assert problem is not None and "not a sum of squares" in problem, problem


@pytest.mark.parametrize("workers", [1, 2])
def test_honest_processes_pass(upstream: server.ServerProcess, workers: int) -> None:
    proc = start_kit(upstream.url, workers=workers)
    try:
        problem = claims.process_problem(proc, info_of(proc), rounds=6)
    finally:
        assert proc.stop().clean
    assert problem is None, problem


def process_check(proc: server.ServerProcess) -> tuple[dict[str, Any], str | None]:
    """A started server's /info and its process problem; the server is stopped after."""
    try:
        info = info_of(proc)
        return info, claims.process_problem(proc, info)
    finally:
        assert proc.stop().clean


def test_one_process_reporting_workers_is_caught(upstream: server.ServerProcess) -> None:
    info, problem = process_check(start_kit(upstream.url, workers=2, spread=False))
    assert info["workers"] == 2
    assert problem is not None and "1 distinct process(es) answered" in problem, problem


def test_honest_stop_under_load_passes(upstream: server.ServerProcess) -> None:
    def one(group: bool) -> str | None:
        return claims.stop_under_load_problem(start_kit(upstream.url, workers=2), group=group)

    with ThreadPoolExecutor(2) as threads:
        assert list(threads.map(one, [False, True])) == [None, None]


def test_ignoring_sigterm_is_caught(upstream: server.ServerProcess) -> None:
    """By the suite's check as it runs it: once more on a fresh server after a miss."""
    started: list[server.ServerProcess] = []

    def liar() -> server.ServerProcess:
        started.append(start_kit(upstream.url, lies="ignore-sigterm"))
        return started[-1]

    problem = timed.stopped_under_load(liar(), False, liar)
    assert problem is not None and "still running after 5s" in problem, problem
    assert "; again: " in problem and len(started) == 2
    assert not any(p.alive() for p in started)


@pytest.mark.parametrize("table", list(strict.TABLES))
def test_honest_strict_contract_passes(honest: server.ServerProcess, table: str) -> None:
    assert strict.problems(honest.url, strict.TABLES[table]) == []


@pytest.mark.parametrize(
    ("table", "evidence"),
    [
        ("grammar", "GET /sync?ms=1.0 (decimal point): status 200"),
        ("repeats", "GET /sync?ms=1&ms=2 (given twice): status 200"),
        ("methods", "HEAD /hello (only GET): status 200"),
        ("cap", "GET /sequential?ms=101&n=100 (over): no answer within 2s"),
        ("not-found", "GET /no-such-endpoint (unknown path): Content-Type 'text/plain"),
    ],
)
def test_strict_contract_lies_are_caught(
    kit_liar: server.ServerProcess, table: str, evidence: str
) -> None:
    path = evidence.split()[1].split("?")[0]  # only that path's cases: a liar may be slow
    cases = [c for c in strict.TABLES[table] if c.path.split("?")[0] == path]
    found = strict.problems(kit_liar.url, cases)
    assert any(p.startswith(evidence) for p in found), found[:5]


def test_honest_refuses_at_once_while_loaded(honest: server.ServerProcess) -> None:
    assert strict.refusal_load(info_of(honest))["executor"] == 4
    assert strict.loaded_refusal_problem(honest.url, info_of(honest)) is None


def test_refusal_queued_behind_the_executor_is_caught(upstream: server.ServerProcess) -> None:
    """Idle, the lie answers every table at once; loaded, its 4xx waits for /executor's pool."""
    proc = start_kit(upstream.url, lies="refusal-in-executor")
    try:
        idle = strict.problems(proc.url, strict.LOADED_REFUSALS)
        problem = strict.loaded_refusal_problem(proc.url, info_of(proc))
    finally:
        assert proc.stop().clean
    assert idle == [], idle
    assert problem is not None and "refusals must answer within 0.5s" in problem, problem
    assert problem.count("GET /no-such-endpoint") == 1, problem


# --- the database: claims counted at the database, rows read from the table ----------------


@pytest.mark.parametrize("endpoint", ["db", "db-blocking"])
def test_honest_db_claims_pass(
    honest: server.ServerProcess, database: Database, endpoint: str
) -> None:
    problem = claims.db_claim_problem(honest, "kit", database, CONTRACT[endpoint], info_of(honest))
    assert problem is None, problem


def test_honest_db_rows_pass(honest: server.ServerProcess, database: Database) -> None:
    assert claims.db_rows_problem(honest.url, database) is None


@pytest.mark.parametrize(
    ("lies", "db_pool", "evidence"),
    [
        # claims DB_POOL=2 (the default 10 would take 11 rounds to time), opens 1
        ("db-pool-1", "2", {"db": "showed at most 1 of its connections running pg_sleep"}),
        ("db-new-conn", "", {"db": "a new connection per request"}),
        (
            "db-sleep,db-rows-formula",  # independent lies: /db and /db-rows
            "",
            {
                "db": "showed at most 0 of its connections running pg_sleep",
                "db-rows": "it did not read the table",
            },
        ),
    ],
)
def test_database_lies_are_caught(
    upstream: server.ServerProcess,
    database: Database,
    lies: str,
    db_pool: str,
    evidence: dict[str, str],
) -> None:
    proc = start_kit(upstream.url, lies=lies, database_url=database.url, db_pool=db_pool)
    try:
        found = {
            name: claims.db_rows_problem(proc.url, database)
            if name == "db-rows"
            else claims.db_claim_problem(proc, "kit", database, CONTRACT[name], info_of(proc))
            for name in evidence
        }
    finally:
        assert proc.stop().clean
    for name, words in evidence.items():
        assert found[name] is not None and words in found[name], (name, found[name])


@strict.SCHEMA.parametrize()
@strict.SETTINGS
def test_honest_passes_schemathesis(honest: server.ServerProcess, case: Any) -> None:
    strict.call(case, honest.url)


LIAR_FAILURES: list[str] = []  # what schemathesis found on the liar's /sync, in file order


@strict.SCHEMA.include(path="/sync").parametrize()
@strict.SETTINGS
def test_schemathesis_runs_on_the_liar(kit_liar: server.ServerProcess, case: Any) -> None:
    strict.quick(case)
    try:
        case.call_and_validate(base_url=kit_liar.url)
    except (AssertionError, FailureGroup) as failure:
        LIAR_FAILURES.append(f"{case.query}: {' '.join(str(failure).split())[:200]}")


def test_schemathesis_caught_the_liar() -> None:
    """The coverage phase sends ms=0.5, which the liar reads as 0 (a 200 to data the
    contract calls invalid); the honest target passes the same run (above)."""
    assert any("accepted" in f for f in LIAR_FAILURES), LIAR_FAILURES or "no failure found"


# --- Node: the Express target with lies planted (bites/node beside this file) -------------

NODE_LIAR = Path(__file__).parent / "bites" / "node"


def start_node(
    upstream_url: str, lies: str = "", workers: int | None = None, threads: int = 1
) -> server.ServerProcess:
    """bites/node: the Express target's router and kit, lies planted; workers: through
    node:cluster (--workers), else one process."""
    from lab import ROOT

    command = [str(ROOT / ".tools" / "node" / "bin" / "node"), "app.js"]
    command += ["--workers", str(workers)] if workers else []
    return start_liar(f"node-{lies or 'honest'}", command, NODE_LIAR, upstream_url, lies, threads)


def start_liar(
    name: str, command: list[str], cwd: Path, upstream_url: str, lies: str, threads: int
) -> server.ServerProcess:
    """A kit target's copy with lies planted (LAB_LIES), on a free port, started."""
    port = server.free_port()
    env = {
        **os.environ,
        "HOST": server.HOST,
        "PORT": str(port),
        "THREADS": str(threads),
        "UPSTREAM_URL": upstream_url,
        "LAB_CONTRACT": str(server.OPENAPI),
        "LAB_LIES": lies,
    }
    return server.ServerProcess(name.replace(",", "+"), command, cwd, env, port).start()


@pytest.fixture(scope="module")
def node_honest(upstream: server.ServerProcess) -> Iterator[server.ServerProcess]:
    proc = start_node(upstream.url)
    yield proc
    assert proc.stop().clean


@pytest.fixture(scope="module")
def node_liar(upstream: server.ServerProcess) -> Iterator[server.ServerProcess]:
    """Independent lies in one process: each check looks at one endpoint."""
    proc = start_node(upstream.url, lies="blocking-async,executor-4x")
    yield proc
    assert proc.stop().clean


@pytest.mark.parametrize("endpoint", ["async", "executor"])
def test_node_honest_claims_pass(node_honest: server.ServerProcess, endpoint: str) -> None:
    capacity = info_of(node_honest)["capacity"][endpoint]
    assert claims.capacity_problem(node_honest.url, CONTRACT[endpoint], capacity) is None


def test_node_honest_claims_pass_timed_together(node_honest: server.ServerProcess) -> None:
    """Every waiting claim, the unbounded ones at once, as the suite times them."""
    capacity = info_of(node_honest)["capacity"]
    waiting = [e for e in CONTRACT.bench_endpoints() if e.kind in ("sleep", "upstream")]
    found = claims.capacity_problems(node_honest.url, [(e, capacity[e.name]) for e in waiting])
    assert found == dict.fromkeys(found), found


@pytest.mark.parametrize(
    ("endpoint", "evidence"),
    [
        ("async", "capacity None should take 1 x"),  # 8 at once take 8 rounds on a blocked loop
        ("executor", "capacity 4 should take 2 x"),  # a pool of 1 thread claiming 4
    ],
)
def test_node_lies_are_caught(
    node_liar: server.ServerProcess, endpoint: str, evidence: str
) -> None:
    capacity = info_of(node_liar)["capacity"][endpoint]
    problem = claims.capacity_problem(node_liar.url, CONTRACT[endpoint], capacity)
    assert problem is not None and evidence in problem, problem


@pytest.mark.parametrize("lies", ["", "workers-2x"])
def test_node_cluster_workers(upstream: server.ServerProcess, lies: str) -> None:
    """A cluster of 2 honest workers passes the process check; one that has 1 worker and
    reports 2 is caught."""
    info, problem = process_check(start_node(upstream.url, lies=lies, workers=1 if lies else 2))
    assert info["workers"] == 2
    if lies:
        assert problem is not None and "1 distinct process(es) answered" in problem, problem
    else:
        assert problem is None, problem


# --- the JVM: the jdkhttp target with lies planted (Liar.java, the jdkhttp module's test code,
# compiled and formatted with it) ---------------------------------------------------------------


def start_jvm(
    upstream_url: str, mode: str, lies: str = "", threads: int = 4
) -> server.ServerProcess:
    """Liar.java: the jdkhttp target's app and server on its jar (built by its manifest's
    command), lies planted; mode: platform (THREADS threads) or virtual."""
    return start_java_liar("jdkhttp", mode, f"jvm-{mode}", upstream_url, lies, threads)


def start_java_liar(
    target: str, mode: str, name: str, upstream_url: str, lies: str, threads: int
) -> server.ServerProcess:
    """A JVM target's Liar.java (its module's test code) run on the target's jar, which its
    manifest's command builds; mode is the Liar's argument (the profile)."""
    from lab import ROOT
    from lab.targets import find

    t = find(target)
    server.run_build(tuple(server.fill(p, t) for p in t.build), t.folder)
    java = str(ROOT / ".tools" / "jdk" / "bin" / "java")
    jar = str(ROOT / ".build" / f"{target}.jar")
    liar = t.folder / "src" / "test" / "java" / "lab" / target / "Liar.java"
    command = [java, "--enable-native-access=ALL-UNNAMED", "-cp", jar, str(liar), mode]
    return start_liar(f"{name}-{lies or 'honest'}", command, t.folder, upstream_url, lies, threads)


@pytest.fixture(scope="module")
def jvm_virtual_liar(upstream: server.ServerProcess) -> Iterator[server.ServerProcess]:
    proc = start_jvm(upstream.url, "virtual", lies="blocking-unbounded")
    yield proc
    assert proc.stop().clean


def test_jvm_honest_blocking_claim_passes(jvm_virtual_liar: server.ServerProcess) -> None:
    """The same app states every other claim honestly: /cpu holds a carrier too (C)."""
    info = info_of(jvm_virtual_liar)
    assert info["capacity"]["cpu"] == info["carriers"]
    problem = claims.capacity_problem(jvm_virtual_liar.url, CONTRACT["sync"], None)
    assert problem is None, problem


def test_jvm_pinned_virtual_thread_claiming_unbounded_is_caught(
    jvm_virtual_liar: server.ServerProcess,
) -> None:
    """/blocking's native sleep pins its virtual thread's carrier: 8 at once on C carriers
    take 8/C rounds, not the one an unbounded claim means."""
    capacity = info_of(jvm_virtual_liar)["capacity"]["blocking"]
    assert capacity is None
    problem = claims.capacity_problem(jvm_virtual_liar.url, CONTRACT["blocking"], capacity)
    assert problem is not None and "capacity None should take 1 x" in problem, problem


def test_jvm_pool_claiming_2x_and_waiting_on_sigterm_are_caught(
    upstream: server.ServerProcess,
) -> None:
    """Two liars, started at once, checked side by side (the second waits 5 s on a sleeping
    request meanwhile): a platform pool of 4 claiming 8 for /sync; a shutdown hook that waits
    for the request threads, which holds the JVM past 5 s while a 10 s /sync is in flight
    (the honest hook stops the server and lets the JVM halt)."""
    with ThreadPoolExecutor(2) as threads:
        pool, waits = threads.map(
            lambda args: start_jvm(upstream.url, *args),
            [("platform", "sync-2x"), ("virtual", "wait-for-requests")],
        )
        stopped = threads.submit(claims.stop_under_load_problem, waits, group=False)
        try:
            info = info_of(pool)
            honest = claims.capacity_problem(pool.url, CONTRACT["sequential"], 4)
            problem = claims.capacity_problem(pool.url, CONTRACT["sync"], info["capacity"]["sync"])
        finally:
            assert pool.stop().clean
        sigterm = stopped.result()
    assert (info["threads"], info["capacity"]["sync"]) == (4, 8), info
    assert honest is None, honest
    assert problem is not None and "capacity 8 should take 2 x" in problem, problem
    assert sigterm is not None and "still running after 5s" in sigterm, sigterm


# --- Spring: the Spring target with lies planted (its module's test code, Liar.java) ----------


def start_spring(upstream_url: str, profile: str, lies: str = "") -> server.ServerProcess:
    """Liar.java: the Spring target's app on its jar (built by its manifest's command; its
    libraries on the jar's class path), lies planted."""
    return start_java_liar("spring", profile, f"spring-{profile}", upstream_url, lies, 4)


def test_webflux_blocking_claimed_unbounded_is_caught(upstream: server.ServerProcess) -> None:
    """WebFlux's /blocking sleeps on the connection's event loop: 8 at once on its 4 loops
    take 2 rounds, not the one an unbounded claim means. The same liar's other claims are
    honest: /sync, which holds a loop the same way, passes with the loops' count."""
    proc = start_spring(upstream.url, "webflux", lies="blocking-unbounded")
    try:
        info = info_of(proc)
        honest = claims.capacity_problem(proc.url, CONTRACT["sync"], info["capacity"]["sync"])
        problem = claims.capacity_problem(proc.url, CONTRACT["blocking"], None)
    finally:
        assert proc.stop().clean
    assert (info["threads"], info["capacity"]["sync"], info["capacity"]["blocking"]) == (4, 4, None)
    assert honest is None, honest
    assert problem is not None and "capacity None should take 1 x" in problem, problem
