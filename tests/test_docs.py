"""Docs that cannot drift: README's targets table is what the manifests say."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import ROOT, docs
from lab.targets import discover


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
