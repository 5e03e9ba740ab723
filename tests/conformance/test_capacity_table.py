"""The docs' tables are what every server states. CONTRACT.md's capacity tables: each
profile's formulas, evaluated with its /info (W workers, T threads, E executor threads, P pool
processes, D the database pool), give the capacities its /info claims (and the conformance
suite times those claims). README's pools table: each profile's driver, default pool,
/db-blocking and /db capacity with WORKERS=1 are what its /info says."""

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


def test_readme_pools_table_matches_info(served: Served) -> None:
    """Served with WORKERS=1 and no DB_POOL: the defaults the README states."""
    row = docs.pools_table()[(served.target.name, served.profile)]
    wrong = docs.pool_row_problems(row, served.info)
    assert not wrong, (
        f"README's pools table disagrees with {served.target.name}/{served.profile}'s /info: "
        f"{wrong}"
    )
