"""`lab compare`: per-cell change between two runs, judged against the runs' own noise."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.report import compare

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

FIXTURE = Path(__file__).parent / "fixtures" / "report-run"
SYNC = "fastapi/uvicorn/sync?ms=100@vus=10"  # three repeats: 80, 82, 84 rps (CV 2.4 %)


def changed_copy(tmp_path: Path, factors: dict[str, float]) -> Path:
    """The fixture run with some cells' rps multiplied."""
    run = tmp_path / "b"
    shutil.copytree(FIXTURE, run)
    with (run / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        factor = factors.get(row["cell"].rsplit("#", 1)[0])
        if factor and row["rps"]:
            row["rps"] = str(float(row["rps"]) * factor)
    with (run / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return run


def by_cell(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(r["cell"]): r for r in rows}


def test_a_run_against_itself_changes_nothing() -> None:
    rows = compare.compare(FIXTURE, FIXTURE)
    assert rows and not any(r.get("significant") for r in rows)
    sync = by_cell(rows)[SYNC]
    assert sync["rps_a"] == sync["rps_b"] == 82.0  # the median of 80, 82, 84
    assert sync["noise_measured"] is True
    assert sync["noise"] == pytest.approx(0.0244, abs=0.0005)


def test_changes_beyond_the_noise_are_flagged(tmp_path: Path) -> None:
    async_ = "gin/release/async?ms=100@vus=10"  # one repeat: noise assumed
    b = changed_copy(tmp_path, {SYNC: 1.5, async_: 1.01})
    rows = by_cell(compare.compare(FIXTURE, b))
    assert rows[SYNC]["d_rps"] == pytest.approx(0.5)
    assert rows[SYNC]["significant"] is True
    assert rows[async_]["noise_measured"] is False
    assert rows[async_]["noise"] == compare.ASSUMED_CV
    assert rows[async_]["significant"] is False  # 1 % is within 2 x 5 %


def test_cells_in_one_run_only(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, {})
    with (b / "results.csv").open() as f:
        lines = f.readlines()
    (b / "results.csv").write_text("".join(line for line in lines if "gin/release/cpu" not in line))
    rows = by_cell(compare.compare(FIXTURE, b))
    assert rows["gin/release/cpu?n=1000000@vus=10"] == {
        "cell": "gin/release/cpu?n=1000000@vus=10",
        "only_in": "A",
    }


def test_cli(tmp_path: Path) -> None:
    b = changed_copy(tmp_path, {SYNC: 1.5})
    done = subprocess.run(
        [sys.executable, "-m", "lab", "compare", str(FIXTURE), str(b)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith(SYNC))
    assert "+50.0%" in line and "CHANGED" in line
    bad = subprocess.run(
        [sys.executable, "-m", "lab", "compare", str(FIXTURE), "no-such-run"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
