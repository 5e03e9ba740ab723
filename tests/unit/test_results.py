"""lab/run/folder.py: run folders, the CSV written one flushed row per cell, run ids, the
`latest` link and run.json."""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.run import folder
from lab.run.folder import COLUMNS, RunDir, resolve

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def freeze_clock(monkeypatch: pytest.MonkeyPatch, stamp: str = "2030-01-02 03:04:05") -> None:
    """Make lab.run.folder see one fixed second (only lab.run.folder: time itself is untouched)."""
    fixed = time.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    fake = SimpleNamespace(strftime=time.strftime, gmtime=lambda *_: fixed)
    monkeypatch.setattr(folder, "time", fake)


def raw_rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def test_create_makes_the_folder_and_the_header(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    assert run.path.parent == tmp_path
    assert run.run_id == run.path.name
    assert run.summaries.is_dir() and run.logs.is_dir()
    assert raw_rows(run.csv_path) == [COLUMNS]
    assert run.rows() == []


def test_columns_are_unique() -> None:
    assert len(COLUMNS) == len(set(COLUMNS))
    assert COLUMNS[:2] == ["run_id", "cell"]


def test_append_is_on_disk_at_once(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.append({"run_id": run.run_id, "cell": "a#1", "status": "ok", "requests": 12})
    # read back with a fresh reader, the RunDir still in use
    rows = raw_rows(run.csv_path)
    assert len(rows) == 2
    assert rows[1][COLUMNS.index("cell")] == "a#1"
    assert rows[1][COLUMNS.index("requests")] == "12"
    run.append({"cell": "b#1", "status": "error", "error": "boom, with a comma\nand a line"})
    got = run.rows()
    assert [r["cell"] for r in got] == ["a#1", "b#1"]
    assert got[1]["error"] == "boom, with a comma\nand a line"
    assert list(got[0]) == COLUMNS


def test_append_formats_values(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.append(
        {
            "cell": "x",
            "rate": None,
            "loadgen_bound": True,
            "failed_rate": False,
            "capacity": {"sync": 40, "async": None},
            "k6_cpus": [1, 2],
            "rps": 457.4981675800079,
            "duration_s": 2.0,
            "vus": 50,
            "not_a_column": "dropped",
        }
    )
    (row,) = run.rows()
    assert row["rate"] == ""
    assert row["loadgen_bound"] == "true"
    assert row["failed_rate"] == "false"
    assert json.loads(row["capacity"]) == {"sync": 40, "async": None}
    assert row["capacity"] == '{"sync":40,"async":null}'
    assert json.loads(row["k6_cpus"]) == [1, 2]
    assert row["rps"] == "457.498"
    assert row["duration_s"] == "2"
    assert row["vus"] == "50"
    assert row["status"] == "error"  # a row that never said it went well is not ok
    assert row["verdict"] == ""  # a missing column is empty
    assert "not_a_column" not in row
    assert raw_rows(run.csv_path)[0] == COLUMNS  # extra keys never reach the header


def test_two_runs_in_one_second_are_distinct_and_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder, "RESULTS_DIR", tmp_path)
    freeze_clock(monkeypatch)
    runs = [RunDir.create(tmp_path) for _ in range(3)]
    ids = [r.run_id for r in runs]
    assert len(set(ids)) == 3, ids
    assert sorted(ids) == ids
    assert all(i.startswith("20300102-030405") for i in ids)


def test_two_runs_in_one_second_under_out_are_distinct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    freeze_clock(monkeypatch)
    first = RunDir.create(tmp_path)
    first.append({"cell": "kept"})
    second = RunDir.create(tmp_path)
    assert first.run_id != second.run_id
    assert [r["cell"] for r in first.rows()] == ["kept"]


def test_many_runs_in_one_second_stay_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder, "RESULTS_DIR", tmp_path)
    freeze_clock(monkeypatch)
    ids = [RunDir.create(tmp_path).run_id for _ in range(11)]
    assert sorted(ids) == ids


def test_ids_sort_by_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = []
    for stamp in ("2030-01-02 03:04:05", "2030-01-02 03:04:06", "2030-11-02 00:00:00"):
        freeze_clock(monkeypatch, stamp)
        ids.append(RunDir.create(tmp_path).run_id)
    assert ids == ["20300102-030405", "20300102-030406", "20301102-000000"]


def test_latest_points_at_the_newest_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_clock(monkeypatch, "2030-01-02 03:04:05")
    old = RunDir.create(tmp_path)
    old.point_latest()
    freeze_clock(monkeypatch, "2030-01-02 03:04:07")
    new = RunDir.create(tmp_path)
    link = tmp_path / "latest"
    assert os.readlink(link) == old.run_id  # a run that has not started does not move it
    new.point_latest()
    assert link.is_symlink()
    assert os.readlink(link) == new.run_id  # relative: the results folder can move
    assert link.resolve() == new.path.resolve()
    assert old.path.is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".latest")]


def test_meta_round_trip(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    meta = {
        "run_id": run.run_id,
        "status": "running",
        "options": {"url": None, "pin": True, "health_timeout": 30.0},
        "cells": [{"target": "gin", "params": {"ms": 100}, "rate": None}],
        "note": "µs ✓",
    }
    run.write_meta(meta)
    assert run.meta() == meta
    meta["status"] = "complete"
    run.write_meta(meta)
    assert run.meta()["status"] == "complete"
    assert sorted(p.name for p in run.path.iterdir()) == ["k6", "logs", "results.csv", "run.json"]


def test_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_clock(monkeypatch, "2030-01-02 03:04:05")
    old = RunDir.create(tmp_path)
    old.write_meta({"run_id": old.run_id})
    freeze_clock(monkeypatch, "2030-01-02 03:04:09")
    new = RunDir.create(tmp_path)
    new.write_meta({"run_id": new.run_id})
    new.point_latest()
    monkeypatch.chdir(tmp_path.parent)  # a relative id must not depend on the cwd
    assert resolve("latest", tmp_path) == new.path.resolve()
    assert resolve(old.run_id, tmp_path) == old.path.resolve()
    assert resolve(str(old.path), tmp_path) == old.path.resolve()
    assert RunDir(resolve("latest", tmp_path)).run_id == new.run_id


def test_resolve_needs_run_json(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)  # no run.json yet
    with pytest.raises(FileNotFoundError, match="no run at"):
        resolve(run.run_id, tmp_path)
    with pytest.raises(FileNotFoundError, match="no run at"):
        resolve("19990101-000000", tmp_path)


def test_provenance_names_the_machine_and_tools() -> None:
    prov = folder.provenance("/bin/true")
    assert len(prov["git_commit"]) == 40
    assert isinstance(prov["git_dirty"], bool)
    assert prov["machine"]["cores"] == os.cpu_count()
    assert prov["machine"]["memory_gb"] > 0
    assert prov["versions"]["python"].count(".") == 2
    assert prov["versions"]["go"].startswith("go version")
