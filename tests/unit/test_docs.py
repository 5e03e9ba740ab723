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
