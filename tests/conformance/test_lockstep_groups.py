"""The two lockstep shares the runner reads for a cell of more VUs than the calibration's 8
connections (lab.model.group_share), on the real servers whose groups the model tells apart:
Django's ASGI handler (its thread hops hold a group of every request: the group at 32
connections is at least twice the one at 8) and hypercorn (its groups are the requests that
reach its loop together: about as many at 32 as at 8)."""

from __future__ import annotations

import pytest
from harness.targets import Served

from lab import model
from lab.contract import load
from lab.matrix import Cell
from lab.run import calibrate

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

# target/profile -> whether its /async group grows with the connections
GROWS = {("django", "uvicorn"): True, ("quart", "hypercorn"): False}
VUS = 100  # a cell of the io matrix's VUs


def groups(served: Served) -> tuple[float, float]:
    """The /async group's size (share x connections) at 8 and at 32 connections, read as the
    runner reads them (calibrate.server_cost, wide_lockstep)."""
    endpoint = load()["async"]
    cell = Cell(served.target.name, served.profile, "async", (("ms", 100),), VUS, None, "10s", 1)
    pid = served.proc.pid
    first = calibrate.server_cost(served.url, endpoint, cell, pid).lockstep
    wide = calibrate.wide_lockstep(served.url, endpoint, cell, pid)
    assert first is not None and wide is not None, (first, wide)
    return first * model.CONNECTIONS, wide * model.WIDE_CONNECTIONS


def test_a_group_grows_with_the_connections_or_keeps_its_size(served: Served) -> None:
    case = (served.target.name, served.profile)
    if case not in GROWS:
        pytest.skip("the two servers whose groups differ: Django's ASGI handler and hypercorn")
    assert model.lockstep_applies("sleep", "async", served.info)
    for _ in range(2):  # once more on a busy machine: the two differ by 2-9x
        narrow, broad = groups(served)
        if (broad >= model.GROUP_GROWS * narrow) == GROWS[case] and narrow > 1:
            return
    grows = "grows" if GROWS[case] else "does not grow"
    raise AssertionError(
        f"{case[0]}/{case[1]}'s /async group {grows} with the connections, yet it read "
        f"{narrow:.1f} requests of 8 and {broad:.1f} of 32"
    )
