"""The docs' tables are what every server states. CONTRACT.md's capacity tables: each
profile's formulas, evaluated with its /info (W workers, T threads, E executor threads, P pool
processes, D the database pool), give the capacities its /info claims (and the conformance
suite times those claims). README's pools table: each profile's driver, default pool,
/db-blocking and /db capacity with WORKERS=1 are what its /info says."""

from __future__ import annotations

from typing import TypeVar

import pytest
from harness.targets import Served

from lab import capacities
from lab.tools import docs

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

T = TypeVar("T")


def row_for(table: dict[tuple[str, str], T], served: Served, where: str) -> T:
    """The table's row for the served target and profile; a missing one fails saying what to
    add (README, "Adding a framework")."""
    case = (served.target.name, served.profile)
    if case not in table:
        pytest.fail(
            f"{where} has no row for {case[0]}/{case[1]}: add one (a profile may share a row: "
            f"'{case[0]} / {case[1]}, ...'), its values as the server's /info states them",
            pytrace=False,
        )
    return table[case]


def test_contract_capacity_table_matches_info(served: Served) -> None:
    row = row_for(capacities.table(), served, "CONTRACT.md's capacity table")
    info = served.info
    # Two tables make a row (the sleeps' and CPU's, the database's): each needs the profile.
    missing = sorted(set(info["capacity"]) - set(row) - {"hello"})  # /hello: in no table
    assert not missing, (
        f"CONTRACT.md's capacity tables give {served.target.name}/{served.profile} no formula "
        f"for {', '.join(missing)}: add its row to the table that has those columns"
    )
    wrong = {
        endpoint: (formula, capacities.evaluate(formula, info), info["capacity"].get(endpoint))
        for endpoint, formula in row.items()
        if capacities.evaluate(formula, info) != info["capacity"].get(endpoint)
    }
    assert not wrong, (
        f"CONTRACT.md's capacity table disagrees with {served.target.name}/{served.profile}'s "
        f"/info (endpoint: formula, its value, /info): {wrong}"
    )


def test_readme_pools_table_matches_info(served: Served) -> None:
    """Served with WORKERS=1 and no DB_POOL: the defaults the README states."""
    row = row_for(docs.pools_table(), served, "README's pools table")
    wrong = docs.pool_row_problems(row, served.info)
    assert not wrong, (
        f"README's pools table disagrees with {served.target.name}/{served.profile}'s /info: "
        f"{wrong}"
    )
