"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness.labrun import LabRun


@pytest.fixture
def lab_run(tmp_path: Path) -> Iterator[Callable[..., LabRun]]:
    started: list[LabRun] = []

    def start(*args: str, env: dict[str, str] | None = None) -> LabRun:
        run = LabRun(list(args), tmp_path / "console", env)
        started.append(run)
        return run

    yield start
    for run in started:
        run.kill_all()


@pytest.fixture
def db_out() -> Iterator[Path]:
    """A folder for a run that starts a database, one its user reaches (pytest's tmp_path is
    closed to others: when the lab runs as root, postgres runs as nobody)."""
    path = Path(tempfile.mkdtemp(prefix="lab-db-runs-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
