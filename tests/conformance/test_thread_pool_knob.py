"""Where a profile's request threads are a pool of T (CONTRACT.md's formula T: the JVM's
platform profiles, 200 by default, Tomcat's maximum), the suite cannot time its claims with
the default: 201 requests at once are more than one batch may send (test_conformance.py skips
them). THREADS=4 can: every claim whose formula holds T is timed with T = 4, and a claim of
twice the pool, had /info written it, is caught by the same check. EXECUTOR_THREADS=2 below
the threads tells min(T, E) from T (test_executor_knob.py's check, made here for these
profiles: one server instead of two)."""

from __future__ import annotations

import pytest
from harness.claims import capacity_problem, cpu_claim_problem
from harness.support import get
from harness.targets import CASE_IDS, CASES, start_target

from lab import capacities
from lab.contract import load
from lab.proc import server
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
TABLE = capacities.table()
THREADS = 4
EXECUTOR_THREADS = 2
POOLED = [
    (case, name)
    for case, name in zip(CASES, CASE_IDS, strict=True)
    if TABLE.get((case[0].name, case[1]), {}).get("sync") == "T"
]


@pytest.mark.parametrize(("case"), [c for c, _ in POOLED], ids=[n for _, n in POOLED])
def test_claims_with_a_small_thread_pool(
    case: tuple[Target, str], upstream: server.ServerProcess
) -> None:
    target, profile = case
    proc = start_target(
        target,
        profile,
        upstream.url,
        WORKERS="1",
        THREADS=str(THREADS),
        EXECUTOR_THREADS=str(EXECUTOR_THREADS),
    )
    problems = {}
    try:
        info = get(proc.url, "/info").body
        row = TABLE[(target.name, profile)]
        for endpoint in CONTRACT.bench_endpoints():
            formula = row.get(endpoint.name)
            if endpoint.kind == "none" or endpoint.kind == "db" or "T" not in (formula or ""):
                continue  # the database's claims: test_db_claims.py (D <= T)
            claim = info["capacity"][endpoint.name]
            assert claim == capacities.evaluate(formula, info) <= THREADS, (endpoint.name, claim)
            if endpoint.kind == "cpu":
                problems[endpoint.name] = cpu_claim_problem(proc.url, endpoint, info)
            else:
                problems[endpoint.name] = capacity_problem(proc.url, endpoint, claim)
        lie = capacity_problem(proc.url, CONTRACT["sync"], 2 * THREADS)
    finally:
        assert proc.stop().clean
    assert info["threads"] == THREADS, info
    assert {k: v for k, v in problems.items() if v} == {}
    # /executor holds T where a request thread waits for the pool (min(T, E)); WebFlux's event
    # loops (T) do not wait for it (E)
    timed = {"sync", "cpu"} | ({"executor"} if "T" in (row["executor"] or "") else set())
    assert timed <= set(problems), sorted(problems)
    assert info["capacity"]["executor"] == min(THREADS, EXECUTOR_THREADS), info["capacity"]
    assert lie is not None and "should take 2 x" in lie, lie


def test_a_target_has_the_formula() -> None:
    assert "jdkhttp-platform" in [n for _, n in POOLED]
