"""Docs that cannot drift: README's targets table is what the manifests say."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import ROOT
from lab.targets import discover
from lab.tools import docs

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_readme_targets_table_matches_the_manifests() -> None:
    assert docs.update(check=True), "README's targets table is stale: run 'just docs'"


def test_a_stale_table_is_caught(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    text = docs.README.read_text()
    first = discover()[0]
    readme.write_text(text.replace(f"| `{first.name}`", "| `renamed`", 1))
    with pytest.raises(docs.StaleDocs, match="just docs"):
        docs.update(readme, check=True)
    assert not docs.update(readme)  # rewritten ...
    assert docs.update(readme, check=True)  # ... and current again
    assert readme.read_text() == text


def test_a_readme_without_the_block_says_what_to_add(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no table here\n")
    with pytest.raises(docs.StaleDocs, match="targets:begin"):
        docs.update(readme, check=True)


def test_every_manifest_says_how_it_runs_requests() -> None:
    missing = [t.name for t in discover(ROOT) if not t.concurrency.strip()]
    assert not missing, f"add concurrency = '...' to the target.toml of {missing}"


def test_contract_capacity_table_covers_every_profile_and_no_other() -> None:
    table = docs.capacity_table()
    profiles = {(t.name, p) for t in discover() for p in t.profiles}
    assert not profiles - set(table), f"CONTRACT.md's capacity table lacks {profiles - set(table)}"
    assert not set(table) - profiles, (
        f"CONTRACT.md names what no manifest has: {set(table) - profiles}"
    )


def test_capacity_formulas_evaluate_with_info() -> None:
    info = {"workers": 2, "threads": 4, "executor_threads": 6, "pool_processes": 3}
    assert docs.capacity("W·T", info) == 8
    assert docs.capacity("W·min(T, P)", info) == 6
    assert docs.capacity(None, info) is None
    table = docs.capacity_table()
    assert table[("flask", "gthread")]["cpu-pool"] == "W·min(T, P)"
    assert table[("fastapi", "uvicorn")]["sync"] == "W·T"  # "(anyio, 40)" is a note


def test_a_wrong_formula_is_caught(tmp_path: Path) -> None:
    text = docs.CONTRACT.read_text().replace(
        "| flask / gthread | W·T |", "| flask / gthread | W·X |"
    )
    (tmp_path / "CONTRACT.md").write_text(text)
    with pytest.raises(ValueError, match="cannot read 'W·X'"):
        docs.capacity_table(tmp_path / "CONTRACT.md")


def test_every_profile_has_every_capacity_column() -> None:
    """CONTRACT.md has two capacity tables (the sleeps' and CPU's, the database's): a profile
    missing from one of them lacks that table's endpoints."""
    table = docs.capacity_table()
    columns = set().union(*(set(row) for row in table.values()))
    assert {"sync", "cpu-pool", "upstream-seq", "db", "db-blocking", "db-rows"} <= columns
    lacking = {
        case: sorted(columns - set(row)) for case, row in table.items() if columns - set(row)
    }
    assert not lacking, f"CONTRACT.md's capacity tables lack: {lacking}"


def test_database_formulas_read_the_pool_from_info() -> None:
    info = {"workers": 2, "threads": 4, "database": {"pool": 3}}
    assert docs.capacity("W·D", info) == 6
    assert docs.capacity("W·min(T, D)", info) == 6
    assert docs.capacity("D", info) == 3
    table = docs.capacity_table()
    assert table[("fastapi", "uvicorn")]["db"] == "W·D"
    assert table[("fastapi", "uvicorn")]["db-blocking"] == "W"
    assert table[("flask", "gthread")]["db-rows"] == "W·min(T, D)"
    assert table[("aiohttp", "aiohttp")]["db"] == "W·D"  # "(W = 1)" in the head is a note


def test_readme_pools_table_covers_every_profile_and_no_other() -> None:
    table = docs.pools_table()
    profiles = {(t.name, p) for t in discover() for p in t.profiles}
    assert set(table) == profiles, (profiles - set(table), set(table) - profiles)


def test_pool_numbers_read_cpus_from_info() -> None:
    assert docs.pool_number("10", {"cpus": 2}) == 10
    assert docs.pool_number("max(4, CPUs)", {"cpus": 2}) == 4
    assert docs.pool_number("max(4, CPUs)", {"cpus": 8}) == 8
    with pytest.raises(ValueError, match="cannot read"):
        docs.pool_number("ten", {"cpus": 2})


def _info(**database: object) -> dict[str, object]:
    """An asyncpg target's /info as the README states it, changed by `database`."""
    base = {
        "driver": "asyncpg",
        "driver_version": "0.30.0",
        "pool": 10,
        "pool_source": "default",
        "blocking_driver": "psycopg + psycopg_pool",
        "blocking_pool": 4,
        "blocking": "event loop",
    }
    return {"workers": 1, "cpus": 2, "capacity": {"db": 10}, "database": {**base, **database}}


def test_a_pools_row_that_differs_from_info_is_caught() -> None:
    row = docs.pools_table()[("fastapi", "uvicorn")]
    assert docs.pool_row_problems(row, _info()) == []
    assert docs.pool_row_problems(row, _info(pool=4)) == ["default pool: README 10, /info 4"]
    assert docs.pool_row_problems(row, _info(driver="psycopg")) == [
        "/db driver: README 'asyncpg', /info 'psycopg'"
    ]
    assert docs.pool_row_problems(row, _info(blocking="same as /db")) == [
        "/db-blocking holds: README 'event loop', /info 'same as /db'"
    ]
    assert docs.pool_row_problems(row, _info(pool_source="DB_POOL"))
    go = docs.pools_table()[("gin", "release")]
    info = {**_info(driver="pgx/pgxpool", pool=8, blocking="same as /db"), "cpus": 8}
    info["capacity"] = {"db": 8}
    assert docs.pool_row_problems(go, info) == []
