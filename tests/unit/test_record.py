"""lab/record.py: the one typed record of a cell owns the CSV columns, their types and their
text form; README's column table lists exactly those columns."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from lab import ROOT
from lab.record import COLUMNS, CellResult
from lab.rundir import RunDir

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_columns_are_the_fields_unique_and_stable_at_the_front() -> None:
    assert len(COLUMNS) == len(set(COLUMNS))
    assert COLUMNS[:2] == ["run_id", "cell"]
    for name in ("bound", "server_cpu_ms", "overhead_ms", "loadgen_rps_max", "measured_s",
                 "failed_requests", "failures", "restarts", "censored"):  # fmt: skip
        assert name in COLUMNS


def test_round_trip_keeps_types(tmp_path: Path) -> None:
    row = CellResult(
        run_id="r", cell="gin/release/sync?ms=100@vus=10#2", target="gin", profile="release",
        endpoint="sync", ms=100, vus=10, duration_s=5.0, measured_s=5.12, repeat=2,
        status="ok", requests=480, failed_requests=0, failures="", restarts=0, rps=96.03,
        loadgen_bound=False, server_cpu_bound=True, capacity=None, server_cpu_ms=0.153,
        predicted_rps=99.1, bound="vus", efficiency=0.969, verdict="as predicted",
    )  # fmt: skip
    run = RunDir.create(tmp_path)
    run.append(row)
    (back,) = run.rows()
    assert back == CellResult(**{**row.__dict__, "rps": 96.03, "measured_s": 5.12})
    assert isinstance(back.requests, int) and isinstance(back.rps, float)
    assert back.server_cpu_bound is True and back.loadgen_bound is False
    assert back.capacity is None and back.n is None
    assert (back.key, back.params) == ("gin/release/sync?ms=100@vus=10", "ms=100")
    with run.csv_path.open() as f:
        assert next(csv.reader(f)) == COLUMNS


def test_bad_and_missing_values_read_as_empty() -> None:
    row = CellResult.from_csv({"cell": "x#1", "rps": "abc", "vus": "nan", "requests": "12.0",
                               "loadgen_bound": "maybe", "repeat": ""})  # fmt: skip
    assert (row.rps, row.vus, row.requests, row.loadgen_bound) == (None, None, 12, None)
    assert row.repeat == 1 and row.status == "error"  # an older or broken row is not ok
    assert row.bound == "" and row.measured_s is None  # columns an older file lacks


def test_update_refuses_unknown_columns() -> None:
    row = CellResult()
    row.update(rps=1.0)
    assert row.rps == 1.0
    with pytest.raises(AttributeError):
        row.update(rsp=1.0)


def test_readme_column_table_lists_every_column() -> None:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| column | meaning |") :]
    table = table[: table.index("\n\n")]
    documented: list[str] = []
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        documented += re.findall(r"`([a-z0-9_]+)`", first)
    assert sorted(documented) == sorted(COLUMNS)
    assert len(documented) == len(set(documented))
