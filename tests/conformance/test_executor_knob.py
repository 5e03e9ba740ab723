"""Where /executor's capacity is W·min(T, E) (a request thread waits on one pool of E per
worker: django/gthread), the defaults (T = 4, E >= 5) cannot tell the formula from W·T:
EXECUTOR_THREADS=2 can, and the claim that follows it is timed. A pool of T request threads
(formula T for /sync: the JVM's platform profiles) is checked so in test_thread_pool_knob.py,
on the one server that times T."""

from __future__ import annotations

import pytest
from harness.claims import capacity_problem
from harness.support import get
from harness.targets import CASE_IDS, CASES, start_target

from lab import capacities
from lab.contract import load
from lab.proc import server
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
TABLE = capacities.table()
MIN_E = [
    (case, name)
    for case, name in zip(CASES, CASE_IDS, strict=True)
    if "min(T, E)" in (TABLE[(case[0].name, case[1])]["executor"] or "")
    and TABLE[(case[0].name, case[1])]["sync"] != "T"  # test_thread_pool_knob.py
]


@pytest.mark.parametrize(("case"), [c for c, _ in MIN_E], ids=[n for _, n in MIN_E])
def test_executor_threads_below_the_request_threads(
    case: tuple[Target, str], upstream: server.ServerProcess
) -> None:
    target, profile = case
    proc = start_target(target, profile, upstream.url, WORKERS="1", EXECUTOR_THREADS="2")
    try:
        info = get(proc.url, "/info").body
        honest = capacity_problem(proc.url, CONTRACT["executor"], 2)
        # W·T (4), had /info written it, is caught by the suite's check
        lie = capacity_problem(proc.url, CONTRACT["executor"], info["threads"])
    finally:
        assert proc.stop().clean
    assert (info["threads"], info["executor_threads"]) == (4, 2), info
    assert info["capacity"]["executor"] == 2, info["capacity"]
    assert honest is None, honest
    assert lie is not None and "should take 2 x" in lie, lie


def test_a_target_has_the_formula() -> None:
    assert [n for _, n in MIN_E] == ["django-gthread"]
