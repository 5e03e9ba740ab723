"""CONTRACT.md's capacity tables: every profile has a row, every formula reads, evaluates with
/info's numbers, and a wrong one is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import capacities
from lab.targets import discover

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_contract_capacity_table_covers_every_profile_and_no_other() -> None:
    table = capacities.table()
    profiles = {(t.name, p) for t in discover() for p in t.profiles}
    assert not profiles - set(table), f"CONTRACT.md's capacity table lacks {profiles - set(table)}"
    assert not set(table) - profiles, (
        f"CONTRACT.md names what no manifest has: {set(table) - profiles}"
    )


def test_capacity_formulas_evaluate_with_info() -> None:
    info = {"workers": 2, "threads": 4, "executor_threads": 6, "pool_processes": 3}
    assert capacities.evaluate("W·T", info) == 8
    assert capacities.evaluate("W·min(T, P)", info) == 6
    assert capacities.evaluate(None, info) is None
    table = capacities.table()
    assert table[("flask", "gthread")]["cpu-pool"] == "W·min(T, P)"
    assert table[("fastapi", "uvicorn")]["sync"] == "W·T"  # "(anyio, 40)" is a note


def test_a_wrong_formula_is_caught(tmp_path: Path) -> None:
    text = capacities.CONTRACT.read_text().replace(
        "| flask / gthread | W·T |", "| flask / gthread | W·X |"
    )
    (tmp_path / "CONTRACT.md").write_text(text)
    with pytest.raises(ValueError, match="cannot read 'W·X'"):
        capacities.table(tmp_path / "CONTRACT.md")


def test_every_profile_has_every_capacity_column() -> None:
    """CONTRACT.md has two capacity tables (the sleeps' and CPU's, the database's): a profile
    missing from one of them lacks that table's endpoints."""
    table = capacities.table()
    columns = set().union(*(set(row) for row in table.values()))
    assert {"sync", "cpu-pool", "upstream-seq", "db", "db-blocking", "db-rows"} <= columns
    lacking = {
        case: sorted(columns - set(row)) for case, row in table.items() if columns - set(row)
    }
    assert not lacking, f"CONTRACT.md's capacity tables lack: {lacking}"


def test_database_formulas_read_the_pool_from_info() -> None:
    info = {"workers": 2, "threads": 4, "database": {"pool": 3}}
    assert capacities.evaluate("W·D", info) == 6
    assert capacities.evaluate("W·min(T, D)", info) == 6
    assert capacities.evaluate("D", info) == 3
    table = capacities.table()
    assert table[("fastapi", "uvicorn")]["db"] == "W·D"
    assert table[("fastapi", "uvicorn")]["db-blocking"] == "W"
    assert table[("flask", "gthread")]["db-rows"] == "W·min(T, D)"
    assert table[("aiohttp", "aiohttp")]["db"] == "W·D"  # "(W = 1)" in the head is a note
