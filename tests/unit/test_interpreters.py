"""The Python interpreter axis: lab/interpreters.py (environments, labels, the one-line error),
the axis in matrices and cell ids, the row columns, the report's interpreter section, and one
real cell and one real `serve` on Python 3.13 (skipped when 3.13 is not set up)."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.labrun import run_lab

from lab import ROOT, interpreters
from lab.matrix import Cell, Matrix, MatrixError, expand, load_matrix, python_of
from lab.proc import server
from lab.report import build
from lab.report.groups import read_grouped
from lab.report.pythons import interpreters as section
from lab.report.pythons import interpreters_md
from lab.rundir import COLUMNS
from labkit import info as labkit_info

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def fake(label: str, version: str, default: bool = False) -> interpreters.Interpreter:
    env = ROOT / (".venv" if default else f".venvs/{label}")
    return interpreters.Interpreter(label, version, "cpython", label.endswith("t"), env, default)


ENVS = (fake("3.11", "3.11.7", default=True), fake("3.13", "3.13.0"))


def set_up(label: str) -> bool:
    return any(i.label == label for i in interpreters.available())


# --- labels, environments, the error ------------------------------------------------------


def test_find_by_label_version_or_default() -> None:
    assert interpreters.find("3.13", ENVS).env == ROOT / ".venvs/3.13"
    assert interpreters.find("3.13.0", ENVS).label == "3.13"
    assert interpreters.find("default", ENVS).label == "3.11"
    assert [i.label for i in interpreters.resolve(["3.13", "3.11.7", "3.13.0"], ENVS)] == [
        "3.13",
        "3.11",
    ]
    assert interpreters.parse_labels(" 3.11, 3.13,,") == ["3.11", "3.13"]


def test_unknown_interpreter_names_the_available_ones_and_how_to_get_it() -> None:
    with pytest.raises(interpreters.Unavailable) as err:
        interpreters.find("3.12", ENVS)
    message = str(err.value)
    assert "python 3.12 is not set up" in message
    assert "available: 3.11 (default), 3.13" in message
    assert "pyenv install 3.12" in message and "just setup" in message
    with pytest.raises(interpreters.Unavailable, match=r"pyenv install 3\.13\.0t"):
        interpreters.find("3.13t", ENVS)
    # A version requires-python does not allow: setting it up would not help.
    supported = re.escape("the lab supports 3.11, 3.12, 3.13, 3.13t")
    with pytest.raises(interpreters.Unavailable, match=supported):
        interpreters.find("3.9", ENVS)


def test_wanted_labels_follow_requires_python() -> None:
    assert interpreters.wanted_labels() == ["3.11", "3.12", "3.13", "3.13t"]


def test_the_default_environment_is_found_and_described() -> None:
    default = interpreters.find("default")
    assert default.env == ROOT / ".venv"
    assert default.version == ".".join(map(str, sys.version_info[:3]))
    assert default.label == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert default.implementation == "cpython"


def test_row_fields_come_from_info_then_the_environment() -> None:
    info = {"language": "python", "language_version": "3.13.0"}
    info |= {"python_implementation": "cpython", "gil_enabled": False}
    assert interpreters.row_fields(info, ENVS[0]) == {
        "python": "3.13.0",
        "python_impl": "cpython",
        "gil": False,
    }
    assert interpreters.row_fields({}, ENVS[1]) == {
        "python": "3.13.0",
        "python_impl": "cpython",
        "gil": True,
    }
    go = {"language": "go", "language_version": "go1.26.8"}
    assert interpreters.row_fields(go, None) == {"python": None, "python_impl": None, "gil": None}
    assert {"python", "python_impl", "gil"} <= set(COLUMNS)


def test_info_reports_the_gil() -> None:
    expected = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True  # type: ignore[attr-defined]
    assert labkit_info.gil_enabled() is expected
    body = labkit_info.base("flask", server_name="gunicorn")
    assert body["python_implementation"] == sys.implementation.name
    assert body["gil_enabled"] is expected


# --- the axis in matrices and cell ids ----------------------------------------------------


def test_python_targets_get_the_axis_go_runs_once() -> None:
    matrix = Matrix(name="t", targets=["fastapi", "gin"], endpoints=["hello", "sync"])
    matrix.python = ["3.11", "3.13"]
    cells = expand(matrix, seed=1)
    fastapi = [c for c in cells if c.target == "fastapi"]
    gin = [c for c in cells if c.target == "gin"]
    assert [(c.endpoint, c.python) for c in fastapi] == [
        ("hello", "3.11"),
        ("hello", "3.13"),
        ("sync", "3.11"),
        ("sync", "3.13"),
    ]
    assert [(c.endpoint, c.python) for c in gin] == [("hello", ""), ("sync", "")]
    assert len({c.id for c in cells}) == len(cells) == 6
    # Without the axis, nothing changes: one cell each, ids as before.
    plain = expand(Matrix(name="t", targets=["fastapi"], endpoints=["sync"]), seed=1)
    assert [c.id for c in plain] == ["fastapi/uvicorn/sync?ms=100@vus=50#1"]


def test_repeats_spread_every_interpreter() -> None:
    matrix = Matrix(name="t", targets=["fastapi"], endpoints=["hello"], repeat=3)
    matrix.python = ["3.11", "3.13"]
    cells = expand(matrix, seed=4)
    assert sorted((c.python, c.repeat) for c in cells) == [
        (p, r) for p in ("3.11", "3.13") for r in (1, 2, 3)
    ]


def test_cell_id_names_the_interpreter() -> None:
    cell = Cell("fastapi", "uvicorn", "async", (("ms", 100),), 50, None, "10s", 1, python="3.13")
    assert cell.id == "fastapi/uvicorn+py3.13/async?ms=100@vus=50#1"
    assert cell.series == "fastapi/uvicorn+py3.13"
    assert python_of(cell.id) == "3.13"
    assert python_of("fastapi/uvicorn/async?ms=100@vus=50#1") == ""
    assert python_of("flask/gthread+py3.13t/sync?ms=100@vus=50#2") == "3.13t"
    assert Cell.from_json(json.loads(json.dumps(cell.to_json()))) == cell
    # run.json of a run from before the axis: the cell has no interpreter, its id is unchanged
    old = {k: v for k, v in cell.to_json().items() if k != "python"}
    assert Cell.from_json(old).id == "fastapi/uvicorn/async?ms=100@vus=50#1"


def test_matrix_files_may_list_interpreters() -> None:
    matrix = load_matrix("interpreters")
    assert matrix.python == ["3.11", "3.13"]
    assert {c.python for c in expand(matrix, seed=1)} == {"3.11", "3.13"}
    with pytest.raises(MatrixError, match="list of strings"):
        expand(Matrix(name="t", targets=["fastapi"], python=[3.13]))  # type: ignore[list-item]


# --- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize("command", ["bench", "bench-all"])
def test_unknown_interpreter_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    args = ["bench", "fastapi", "async"] if command == "bench" else ["bench-all"]
    done = run_lab(*args, "--python", "3.11,2.7", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "python 2.7 is not set up; available: " in lines[0]
    assert "(default)" in lines[0]
    assert not (tmp_path / "out").exists(), "a run folder was made for a bad command"


def test_serve_with_an_unknown_python_is_one_line_and_exit_2() -> None:
    done = run_lab("serve", "starlette", env={"PYTHON": "2.7", "PORT": str(server.free_port())})
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "python 2.7 is not set up" in done.stderr


# --- the report section -------------------------------------------------------------------


def write_run(path: Path, rows: list[dict[str, Any]], record: dict[str, Any] | None) -> Path:
    path.mkdir(parents=True)
    meta: dict[str, Any] = {"run_id": path.name, "status": "complete", "cells": []}
    if record is not None:
        meta["interpreters"] = record
    (path / "run.json").write_text(json.dumps(meta))
    with (path / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in COLUMNS})
    return path


def row(cell: str, python: str, rps: float, p95: float, repeat: int = 1, gil: str = "true") -> dict:
    target, profile = cell.split("/")[:2]
    return {
        "run_id": "t",
        "cell": f"{cell}#{repeat}",
        "target": target,
        "profile": profile.split("+")[0],
        "endpoint": cell.split("/")[2].split("?")[0],
        "vus": 50,
        "repeat": repeat,
        "status": "ok",
        "rps": rps,
        "lat_p50_ms": p95 / 2,
        "lat_p95_ms": p95,
        "lat_p99_ms": p95 * 1.2,
        "predicted_rps": 500,
        "efficiency": rps / 500,
        "verdict": "as predicted",
        "python": python,
        "python_impl": "cpython",
        "gil": gil,
    }


RECORD = {
    "used": [
        {"label": "3.11", "version": "3.11.7", "implementation": "cpython", "free_threaded": False,
         "env": ".venv", "default": True},
        {"label": "3.13", "version": "3.13.0", "implementation": "cpython", "free_threaded": False,
         "env": ".venvs/3.13", "default": False},
    ],
}  # fmt: skip
RECORD["available"] = RECORD["used"]
TWO = [
    row("fastapi/uvicorn+py3.11/async?ms=100@vus=50", "3.11.7", 400.0, 150.0),
    row("fastapi/uvicorn+py3.13/async?ms=100@vus=50", "3.13.0", 480.0, 120.0),
    # Repeated: a 1 % difference against a measured spread of about 3 %.
    row("flask/gunicorn+py3.11/sync?ms=100@vus=50", "3.11.7", 10.0, 5000.0),
    row("flask/gunicorn+py3.11/sync?ms=100@vus=50", "3.11.7", 10.6, 5000.0, repeat=2),
    row("flask/gunicorn+py3.13/sync?ms=100@vus=50", "3.13.0", 10.4, 4900.0),
    row("flask/gunicorn+py3.13/sync?ms=100@vus=50", "3.13.0", 10.4, 4900.0, repeat=2),
    {**row("gin/release/async?ms=100@vus=50", "", 500.0, 101.0), "python_impl": "", "gil": ""},
]


def test_section_compares_interpreters_side_by_side(tmp_path: Path) -> None:
    data = section(read_grouped(write_run(tmp_path / "run", TWO, RECORD)), None)
    assert data is not None
    assert data.labels == ["3.11", "3.13"] and data.baseline == "3.11"
    assert [(i.version, i.gil, i.cells) for i in data.used] == [
        ("3.11.7", "on", 3),
        ("3.13.0", "on", 3),
    ]
    by_series = {r.series: r for r in data.rows}
    assert set(by_series) == {"fastapi/uvicorn", "flask/gunicorn"}  # gin has no interpreter
    fastapi = by_series["fastapi/uvicorn"]
    assert [(s.rps, s.p95) for s in fastapi.sides] == [(400.0, 150.0), (480.0, 120.0)]
    (ratio,) = fastapi.ratios
    assert ratio.rps == pytest.approx(1.2) and ratio.p95 == pytest.approx(0.8)
    assert ratio.significant  # 20 % against the assumed 5 % noise
    (flask_ratio,) = by_series["flask/gunicorn"].ratios
    assert flask_ratio.rps == pytest.approx(10.4 / 10.3) and not flask_ratio.significant
    assert "No free-threaded interpreter was available" in data.free_threaded


def test_report_and_summary_show_the_comparison(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run", TWO, RECORD)
    page = build(path).read_text()
    assert '<section id="interpreters">' in page
    assert '<figure class="chart" id="chart-interpreters">' in page
    assert (path / "charts" / "interpreters.png").is_file()
    assert "No free-threaded interpreter was available" in page
    summary = (path / "summary.md").read_text()
    assert "## Interpreters" in summary
    assert "| fastapi/uvicorn | async | 50 | 400.0 | 150.0 | 480.0 | 120.0 | 1.20 | 0.80 |" in (
        summary
    )
    assert "| 1.01 (noise) |" in summary


def test_free_threaded_is_named_not_hidden(tmp_path: Path) -> None:
    # One interpreter and a free-threaded one set up but unused: no comparison, but said.
    ft = {**RECORD["used"][1], "label": "3.13t", "free_threaded": True, "env": ".venvs/3.13t"}
    record = {"used": RECORD["used"][:1], "available": [*RECORD["used"], ft]}
    data = section(read_grouped(write_run(tmp_path / "one", TWO[:1], record)), None)
    assert data is not None and not data.rows and data.chart is None
    assert "3.13t) was set up but this run did not use it" in data.free_threaded
    # A free-threaded interpreter used: whether the GIL really was off, from the rows.
    rows = [
        row("fastapi/uvicorn+py3.13t/async?ms=100@vus=50", "3.13.0", 480.0, 120.0, gil="false"),
        row("flask/gunicorn+py3.13t/sync?ms=100@vus=50", "3.13.0", 10.0, 5000.0, gil="true"),
    ]
    data = section(read_grouped(write_run(tmp_path / "ft", rows, {"used": [ft]})), None)
    assert data is not None
    assert data.used[0].gil == "off in 1 of 2 cells"
    assert "3.13t is a free-threaded build; the GIL was off in 1 of 2 cells" in data.free_threaded
    # A Go-only run has no interpreter section.
    go = write_run(tmp_path / "go", [TWO[-1]], {"used": [], "available": []})
    assert section(read_grouped(go), None) is None
    assert interpreters_md(read_grouped(tmp_path / "go")) == []
