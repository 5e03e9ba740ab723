"""The conformance suite's batch of cases checked at once (harness.timed.checked_then_stopped):
each case's result comes back to that case whatever order they were checked in, and no two
heavy cases (JVMs: their starts take both CPUs) are checked at the same time."""

from __future__ import annotations

import threading
import time

import pytest
from harness import timed

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_each_case_gets_its_own_result_and_heavy_ones_never_overlap() -> None:
    cases = ["a", "B", "c", "D", "e", "f", "G", "h", "i"]  # upper case: heavy
    heavy_now: list[str] = []
    most = [0]
    lock = threading.Lock()

    def check(case: str) -> tuple[str, timed.Problems]:
        with lock:
            if case.isupper():
                heavy_now.append(case)
                most[0] = max(most[0], len(heavy_now))
        time.sleep(0.1 if case.isupper() else 0.01)  # a heavy one outlasts the light ones
        with lock:
            if case.isupper():
                heavy_now.remove(case)
        return f"server of {case}", {"check": f"checked {case}"}

    def stop(case: str, proc: str, found: timed.Problems) -> timed.Problems:
        assert proc == f"server of {case}"
        return {**found, "stop": f"stopped {case}"}

    results = timed.checked_then_stopped(cases, check, stop, at_once=4, heavy=str.isupper)
    assert results == [{"check": f"checked {c}", "stop": f"stopped {c}"} for c in cases]
    assert most[0] == 1


def test_heavy_cases_are_spread_through_the_order() -> None:
    order = timed.spread(list("aBcdeFgHijk"), str.isupper, 4)
    assert order == list("BacdFegiHjk")
    assert sorted(order) == sorted("aBcdeFgHijk")
    assert timed.spread(list("abc"), str.isupper, 1) == list("abc")  # one at a time ends
