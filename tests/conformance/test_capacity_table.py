"""CONTRACT.md's capacity table is what every server states: each profile's formulas,
evaluated with its /info (W workers, T threads, E executor threads, P pool processes), give
the capacities its /info claims (and the conformance suite times those claims)."""

from __future__ import annotations

import pytest
from harness.targets import Served

from lab.tools import docs

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance


def test_contract_capacity_table_matches_info(served: Served) -> None:
    row = docs.capacity_table()[(served.target.name, served.profile)]
    info = served.info
    wrong = {
        endpoint: (formula, docs.capacity(formula, info), info["capacity"].get(endpoint))
        for endpoint, formula in row.items()
        if docs.capacity(formula, info) != info["capacity"].get(endpoint)
    }
    assert not wrong, (
        f"CONTRACT.md's capacity table disagrees with {served.target.name}/{served.profile}'s "
        f"/info (endpoint: formula, its value, /info): {wrong}"
    )
