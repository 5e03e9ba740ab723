"""lab/rundir.py, a run folder's one owner: run folders, the CSV written one flushed row per
cell and read back by one reader, run ids, the `latest` link, run.json (lab.record.RunMeta)
written at the start, on resume and at the end with the same keys in the same order as ever,
and the one rule that marks a run whose runner is gone `died`."""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from lab import ROOT, record, rundir
from lab.matrix import Cell
from lab.record import CellResult, RunMeta
from lab.rundir import COLUMNS, RunDir, read_rows, read_run, resolve

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def freeze_clock(monkeypatch: pytest.MonkeyPatch, stamp: str = "2030-01-02 03:04:05") -> None:
    """Make lab.rundir see one fixed second (only lab.rundir: time itself is untouched)."""
    fixed = time.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    fake = SimpleNamespace(strftime=time.strftime, gmtime=lambda *_: fixed)
    monkeypatch.setattr(rundir, "time", fake)


def raw_rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def text_rows(path: Path) -> list[dict[str, str]]:
    """results.csv as the text a reader of the file sees (the format, not the typed rows)."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


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
    run.append(CellResult(run_id=run.run_id, cell="a#1", status="ok", requests=12))
    # read back with a fresh reader, the RunDir still in use
    rows = raw_rows(run.csv_path)
    assert len(rows) == 2
    assert rows[1][COLUMNS.index("cell")] == "a#1"
    assert rows[1][COLUMNS.index("requests")] == "12"
    run.append(CellResult(cell="b#1", status="error", error="boom, with a comma\nand a line"))
    got = run.rows()
    assert [r.cell for r in got] == ["a#1", "b#1"]
    assert got[1].error == "boom, with a comma\nand a line"
    assert got[0].requests == 12
    assert raw_rows(run.csv_path)[0] == COLUMNS


def test_append_formats_values(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.append(
        CellResult(
            cell="x",
            rate=None,
            loadgen_bound=True,
            failed_rate=False,  # type: ignore[arg-type]
            capacity={"sync": 40, "async": None},  # type: ignore[arg-type]
            k6_cpus=[1, 2],  # type: ignore[arg-type]
            rps=457.4981675800079,
            duration_s=2.0,
            vus=50,
        )
    )
    (row,) = text_rows(run.csv_path)
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
    assert raw_rows(run.csv_path)[0] == COLUMNS


def test_two_runs_in_one_second_are_distinct_and_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rundir, "RESULTS_DIR", tmp_path)
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
    first.append(CellResult(cell="kept"))
    second = RunDir.create(tmp_path)
    assert first.run_id != second.run_id
    assert [r.cell for r in first.rows()] == ["kept"]


def test_many_runs_in_one_second_stay_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rundir, "RESULTS_DIR", tmp_path)
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
    run.write_meta(RunMeta.from_json(meta))
    assert run.meta().to_json() == meta
    back = run.meta()
    back.status = "complete"
    run.write_meta(back)
    assert run.meta().status == "complete"
    assert sorted(p.name for p in run.path.iterdir()) == ["k6", "logs", "results.csv", "run.json"]


def test_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_clock(monkeypatch, "2030-01-02 03:04:05")
    old = RunDir.create(tmp_path)
    old.write_meta(RunMeta(run_id=old.run_id))
    freeze_clock(monkeypatch, "2030-01-02 03:04:09")
    new = RunDir.create(tmp_path)
    new.write_meta(RunMeta(run_id=new.run_id))
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
    prov = rundir.provenance("/bin/true")
    assert len(prov["git_commit"]) == 40
    assert isinstance(prov["git_dirty"], bool)
    assert prov["machine"]["cores"] == os.cpu_count()
    assert prov["machine"]["memory_gb"] > 0
    assert prov["versions"]["python"].count(".") == 2
    assert prov["versions"]["go"].startswith("go version")


# --- run.json: one typed record, the same keys in the same order as ever -------------------

START_KEYS = ["run_id", "status", "started_at", "command", "options", "matrix", "runner",
              "knobs", "cpus", "git_commit", "git_dirty", "machine", "versions", "servers",
              "interpreters", "cells"]  # fmt: skip
CELLS = [Cell("gin", "release", "sync", (("ms", 10),), 5, None, "1s", r) for r in (1, 2, 3)]


def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RunDir, RunMeta]:
    """A run started as bench starts one, without asking git, k6 and go for their versions."""
    prov = {"git_commit": "c" * 40, "git_dirty": False, "machine": {"cores": 2},
            "versions": {"k6": "k6 v1"}}  # fmt: skip
    monkeypatch.setattr(rundir, "provenance", lambda k6: prov)
    for knob in rundir.KNOBS:
        monkeypatch.delenv(knob, raising=False)
    monkeypatch.setenv("WORKERS", "4")
    run = RunDir.create(tmp_path)
    options = {"url": None, "pin": False, "max_cell_s": 6.0}
    meta = run.start(CELLS, {"name": "bench", "seed": 7}, ["bench", "gin", "sync"], options,
                     {"server": None, "k6": None}, "k6")  # fmt: skip
    return run, meta


def on_disk(run: RunDir) -> dict[str, Any]:
    return json.loads((run.path / "run.json").read_text())


def test_start_writes_run_json_with_its_keys_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, meta = started(tmp_path, monkeypatch)
    data = on_disk(run)
    assert list(data) == START_KEYS
    assert (data["run_id"], data["status"]) == (run.run_id, "running")
    assert data["command"] == ["bench", "gin", "sync"]
    assert data["knobs"] == {"WORKERS": "4"}
    assert (data["runner"]["pid"], data["runner"]["host"]) == (os.getpid(), platform.node())
    assert [Cell.from_json(c) for c in data["cells"]] == CELLS
    assert data["servers"] == {} and data["git_commit"] == "c" * 40
    assert (run.path / "run.json").read_text() == json.dumps(data, indent=2) + "\n"
    assert meta.to_json() == data


def test_finish_adds_servers_loadgen_and_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, meta = started(tmp_path, monkeypatch)
    run.finish(meta, "complete", {"gin/release": {"workers": 1}}, [{"vus": 5, "us": 90.0}])
    data = on_disk(run)
    assert list(data) == [*START_KEYS, "loadgen", "finished_at"]
    assert data["servers"] == {"gin/release": {"workers": 1}}
    assert (data["status"], data["loadgen"]) == ("complete", [{"vus": 5, "us": 90.0}])
    other, meta = started(tmp_path, monkeypatch)
    other.finish(meta, "interrupted", {}, [])  # k6's cost not measured: no loadgen key
    assert list(on_disk(other)) == [*START_KEYS, "finished_at"]


def test_run_meta_keeps_unknown_keys_odd_values_and_the_order() -> None:
    data = {"finished_at": "x", "run_id": "r", "future": {"a": 1}, "status": "complete",
            "cells": "not a list", "servers": None, "git_dirty": True}  # fmt: skip
    meta = RunMeta.from_json(data)
    assert meta.to_json() == data and list(meta.to_json()) == list(data)
    assert meta.cells is None and meta.servers is None  # read as absent...
    assert meta.extra == {"future": {"a": 1}, "cells": "not a list", "servers": None}  # ...kept
    assert (meta.git_dirty, meta.finished_at, meta.status) == (True, "x", "complete")
    meta.died, meta.loadgen = "why", []  # keys the file lacks follow, in the fields' order
    assert list(meta.to_json())[-2:] == ["loadgen", "died"]
    meta.cells = []  # a value set wins over the odd one read, in its place
    assert list(meta.to_json()) == [*data, "loadgen", "died"] and meta.to_json()["cells"] == []


def test_the_report_fixture_run_json_round_trips() -> None:
    path = Path(__file__).parent / "fixtures" / "report-run" / "run.json"
    data = json.loads(path.read_text())
    meta = RunMeta.from_json(data)
    assert list(meta.to_json()) == list(data) and meta.to_json() == data
    assert meta.extra == {}


def test_a_broken_run_json_is_a_problem_to_show(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text(",".join(COLUMNS) + "\n")
    (tmp_path / "run.json").write_text("[1, 2]")
    run = read_run(tmp_path)
    assert run.problems == ["run.json is not an object; provenance is missing"]
    assert run.meta.to_json() == {} and run.rows == []
    with pytest.raises(ValueError, match="not an object"):
        RunDir(tmp_path).mark_if_died()  # bench and report say: run.json is not readable
    (tmp_path / "run.json").write_text("{not json")
    (problem,) = read_run(tmp_path).problems
    assert problem.startswith("run.json could not be read (")
    assert problem.endswith("); provenance is missing")


# --- results.csv: one reader, typed rows ------------------------------------------------------


def test_one_reader_types_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows([
            {"cell": "a/p/e?@vus=1#1", "status": "ok", "rps": "12.5", "requests": "12",
             "lat_p95_ms": "inf", "gil": "true", "python": "3.13.0"},
            {"cell": "", "status": "ok", "rps": "1"},
            {"cell": "b/p/e?@vus=1#1", "status": "", "rps": "nan", "requests": "x"},
        ])  # fmt: skip
    rows = read_rows(path)
    assert [r.cell for r in rows] == ["a/p/e?@vus=1#1", "b/p/e?@vus=1#1"]  # no cell: no row
    first, second = rows
    assert (first.rps, first.requests, first.lat_p95_ms, first.gil) == (12.5, 12, None, True)
    assert (second.status, second.rps, second.requests) == ("error", None, None)
    assert read_rows(tmp_path / "none.csv") == []
    # the report, the posts' claims and the interpreters read these same rows
    assert read_run(tmp_path).rows == rows
    assert RunDir(tmp_path).rows() == rows
    from lab.report import posts

    assert posts.ok_by_key(rows) == {"a/p/e?@vus=1": [first]}


# --- resume: the cells done, the errors retried, run.json running again ----------------------


def test_done_cells_and_retried_errors(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    for cell, status in (("a#1", "ok"), ("b#1", "error"), ("c#1", "ok"), ("d#1", "")):
        run.append(CellResult(cell=cell, status=status, rps=457.4981675800079))
    assert run.done() == {"a#1", "c#1"}
    ok_text = [line for line in raw_rows(run.csv_path) if line[1] in ("a#1", "c#1")]
    assert run.retry_errors() == 2
    assert raw_rows(run.csv_path) == [COLUMNS, *ok_text]  # kept as they were written
    assert [r["cell"] for r in text_rows(run.retried_path)] == ["b#1", "d#1"]
    assert run.done() == {"a#1", "c#1"}
    assert run.retry_errors() == 0


def test_resume_and_finish_keep_the_first_servers_and_the_key_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, meta = started(tmp_path, monkeypatch)
    run.finish(meta, "interrupted", {"gin/release": {"workers": 1}}, [])
    record.mark_died(run.path, ended_pid=os.getpid())  # not running: the supervisor leaves it
    meta = run.mark_if_died()
    assert meta.status == "interrupted" and meta.died is None
    run.resume(meta)
    data = on_disk(run)
    assert data["status"] == "running" and data["runner"] == meta.runner
    assert list(data) == [*START_KEYS, "finished_at"]
    run.finish(meta, "complete", {"gin/release": {"workers": 2}, "go/default": {"workers": 3}},
               [{"vus": 5}])  # fmt: skip
    data = on_disk(run)
    assert data["servers"] == {"gin/release": {"workers": 1}, "go/default": {"workers": 3}}
    assert list(data) == [*START_KEYS, "finished_at", "loadgen"]  # as the dict always had it


def test_resume_of_a_died_run_drops_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _ = started(tmp_path, monkeypatch)
    died = record.mark_died(run.path, ended_pid=os.getpid())  # the supervisor's marking
    assert list(on_disk(run)) == [*START_KEYS, "finished_at", "died"]
    run.resume(died)
    assert list(on_disk(run)) == [*START_KEYS, "finished_at"]
    assert on_disk(run)["status"] == "running"


def test_resume_plan_lists_what_is_left_and_changes_nothing(tmp_path: Path) -> None:
    from lab.run.runner import Options

    run = RunDir.create(tmp_path)
    run.write_meta(RunMeta(run_id=run.run_id, status="interrupted", command=["bench"],
                           options=Options(pin=False).to_json(), matrix={"name": "bench"},
                           cells=[c.to_json() for c in CELLS]))  # fmt: skip
    run.append(CellResult(cell=CELLS[0].id, status="ok"))
    run.append(CellResult(cell=CELLS[1].id, status="error"))
    before = {p.name: p.read_bytes() for p in run.path.iterdir() if p.is_file()}
    done = subprocess.run(
        [sys.executable, "-m", "lab", "bench", "gin", "sync", "--resume", run.run_id,
         "--out", str(tmp_path), "--plan"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"resume of {run.run_id}: 2 cells, about ")
    assert CELLS[1].id in done.stdout and CELLS[2].id in done.stdout
    assert CELLS[0].id not in done.stdout
    assert before == {p.name: p.read_bytes() for p in run.path.iterdir() if p.is_file()}


# --- died: one rule, for the readers of a run and for the supervisor -------------------------


def gone_runner() -> dict[str, Any]:
    """The runner identity of a process that has ended."""
    proc = subprocess.Popen(["sleep", "30"])
    started_at = psutil.Process(proc.pid).create_time()
    proc.kill()
    proc.wait()
    return {"pid": proc.pid, "started": started_at, "host": platform.node()}


def test_a_running_run_whose_runner_is_gone_is_marked_died(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.write_meta(RunMeta(run_id=run.run_id, status="running", runner=gone_runner(), cells=[]))
    meta = run.mark_if_died()
    assert meta.status == "died"
    assert meta.died == "found without its runner: it was killed or its machine stopped"
    assert list(on_disk(run)) == ["run_id", "status", "runner", "cells", "died"]
    text = (run.path / "run.json").read_text()
    assert run.mark_if_died().status == "died"  # decided once: a second reader changes nothing
    assert (run.path / "run.json").read_text() == text


def test_a_live_runner_is_not_marked(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.write_meta(RunMeta(status="running", runner=record.runner_identity()))
    text = (run.path / "run.json").read_text()
    assert run.mark_if_died().status == "running"
    # the supervisor of an earlier runner, after another resumed the run: not its run any more
    assert record.mark_died(run.path, ended_pid=os.getpid() + 1).status == "running"
    assert (run.path / "run.json").read_text() == text


def test_the_supervisor_applies_the_same_rule(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    gone = gone_runner()
    run.write_meta(RunMeta(run_id=run.run_id, status="running", runner=gone, cells=[]))
    # its stdin at its end at once: the runner has gone
    subprocess.run(
        [sys.executable, "-m", "lab.proc.supervisor", str(gone["pid"]), str(run.path)],
        stdin=subprocess.DEVNULL, cwd=ROOT, timeout=30, check=True,
    )  # fmt: skip
    data = on_disk(run)
    assert data["status"] == "died"
    assert data["died"] == f"the runner (pid {gone['pid']}) ended without finishing the run"
    assert list(data) == ["run_id", "status", "runner", "cells", "finished_at", "died"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data["finished_at"])
    assert sorted(p.name for p in run.path.iterdir()) == ["k6", "logs", "results.csv", "run.json"]


def test_past_cell_seconds_reads_the_newest_ok_row_of_each_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's estimate reads back what each cell took in this machine's earlier runs: the
    newest ok row of a cell (its repeats and other runs alike), never an error row; the run
    being made, a folder that is not a run, the `latest` link and a results.csv that cannot
    be read are passed over."""
    sync = "gin/release/sync?ms=100@vus=50"

    def run_at(stamp: str, *rows: CellResult) -> RunDir:
        freeze_clock(monkeypatch, stamp)
        run = RunDir.create(tmp_path)
        run.write_meta(RunMeta())
        for row in rows:
            run.append(row)
        return run

    run_at("2030-01-01 00:00:00", CellResult(cell=f"{sync}#1", status="ok", cell_s=9.0),
           CellResult(cell="spring/mvc/cpu?n=1000@vus=50#1", status="ok", cell_s=40.0))  # fmt: skip
    failed = CellResult(cell="flask/gunicorn/hello?@vus=50#1", status="error", cell_s=1.0)
    newer = run_at("2030-01-02 00:00:00", CellResult(cell=f"{sync}#2", status="ok", cell_s=5.5),
                   failed)  # fmt: skip
    newer.point_latest()
    broken = run_at("2030-01-03 00:00:00")
    broken.csv_path.write_bytes(b"cell,status,cell_s\n\x00\xff\xfe")
    (tmp_path / "notes").mkdir()
    making = run_at("2030-01-04 00:00:00", CellResult(cell=f"{sync}#1", status="ok", cell_s=1.0))
    past = rundir.past_cell_seconds(tmp_path, skip=making.run_id)
    assert past == {sync: 5.5, "spring/mvc/cpu?n=1000@vus=50": 40.0}
    assert rundir.past_cell_seconds(tmp_path, skip=making.run_id, runs=1) == {}  # the broken one
    assert rundir.past_cell_seconds(tmp_path / "none") == {}
