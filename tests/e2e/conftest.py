"""Fixtures of the end-to-end tests."""

from __future__ import annotations

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
