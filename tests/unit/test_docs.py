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
