"""tests/conftest.py's rules of kinds: a test without a kind, or outside its kind's folder, stops
the run with one line naming it (checked on a scratch copy of the tests' layout)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lab import ROOT

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

TESTS = ROOT / "tests"


def collect(tmp_path: Path, folder: str, mark: str) -> subprocess.CompletedProcess[str]:
    """pytest --collect-only on a copy of the layout with one test module in `folder`."""
    root = tmp_path / "tests"
    (root / folder).mkdir(parents=True)
    (root / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (root / "harness").symlink_to(TESTS / "harness")
    (root / folder / "test_x.py").write_text(
        f"import pytest\n\n{mark}\n\n\ndef test_x() -> None:\n    pass\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(root)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


# (folder, the module's mark) of each layout collected
LAYOUTS = {
    "in-its-folder": ("e2e", "pytestmark = pytest.mark.e2e"),
    "outside-its-folder": ("unit", "pytestmark = pytest.mark.e2e"),
    "without-a-kind": ("unit", ""),
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each layout collected, all at once: three pytest starts of ~4 s each (one CPU each)."""
    with ThreadPoolExecutor(len(LAYOUTS)) as pool:
        done = {
            name: pool.submit(collect, tmp_path_factory.mktemp(name), folder, mark)
            for name, (folder, mark) in LAYOUTS.items()
        }
        return {name: future.result() for name, future in done.items()}


def test_a_test_in_its_kinds_folder_is_collected(collected: dict[str, Any]) -> None:
    done = collected["in-its-folder"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_x.py::test_x" in done.stdout


def test_a_test_outside_its_kinds_folder_stops_the_run(collected: dict[str, Any]) -> None:
    done = collected["outside-its-folder"]
    assert done.returncode != 0
    assert "tests outside their kind's folder: tests/unit/test_x.py::test_x (e2e)" in (
        done.stdout + done.stderr
    )


def test_a_test_without_a_kind_stops_the_run(collected: dict[str, Any]) -> None:
    done = collected["without-a-kind"]
    assert done.returncode != 0
    assert "tests without a kind: test_x.py" in done.stdout + done.stderr
