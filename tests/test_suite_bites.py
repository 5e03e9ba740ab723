"""The conformance checks must fail a server that lies. tests/bites/liar is such a server:
it blocks where it claims to be unbounded, answers before its work is done, and serves
more at once than it claims."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import get
from test_conformance import capacity_problem, single_timing_problem

from lab import server
from lab.contract import load

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
    problem = capacity_problem(liar, CONTRACT["async"], capacity)
    assert problem is not None and "should take 1 x" in problem, problem


def test_answering_before_the_work_is_done_is_caught(liar: str) -> None:
    problem = single_timing_problem(liar, CONTRACT["gather"])
    assert problem is not None and "before its" in problem, problem


def test_serving_more_than_claimed_is_caught(liar: str) -> None:
    capacity = get(liar, "/info").body["capacity"]["sync"]
    problem = capacity_problem(liar, CONTRACT["sync"], capacity)
    assert problem is not None and "should take 2 x" in problem, problem
