"""The benchmark runner end to end: `python -m lab bench ...` in a subprocess, with real
servers and real k6 on 127.0.0.1, short cells (tests/harness/labrun.py watches every process
it starts)."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness.labrun import (
    BENCH,
    LabRun,
    assert_nothing_left,
    check_meta,
    check_ok_row,
    csv_rows,
    first_of_two_failed,
    is_cell_k6,
    is_gin,
    only_run,
    run_lab,
    wait_for,
)

from lab import stability
from lab.matrix import Cell
from lab.proc import cpuspeed, server
from lab.record import CellResult, RunMeta
from lab.run import loadgen
from lab.run.runner import LOADGEN_COST_S, OVERHEAD_S, cpu_split, estimate_s
from lab.rundir import RunDir
from lab.targets import discover

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e


# --- one cell ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "endpoint", "server_key", "framework", "cell_id"),
    [
        ("go", "sync", "gin/release", "gin", "gin/release/sync?ms=100@vus=10#1"),
        ("fastapi", "sync", "fastapi/uvicorn", "fastapi", "fastapi/uvicorn/sync?ms=100@vus=10#1"),
    ],
    ids=["go", "python"],
)
def test_one_cell(
    tmp_path: Path,
    lab_run: Callable[..., LabRun],
    target: str,
    endpoint: str,
    server_key: str,
    framework: str,
    cell_id: str,
) -> None:
    out = tmp_path / "out"
    run_ = lab_run("bench", target, endpoint, "--duration", "2s", "--vus", "10", "--out", str(out))
    code = run_.wait(timeout=90)
    assert code == 0, run_.stderr
    run = only_run(out)
    meta = check_meta(run, "complete", server_key, framework)
    assert [Cell.from_json(c).id for c in meta["cells"]] == [cell_id]

    (row,) = csv_rows(run)
    assert row["cell"] == cell_id
    assert (row["vus"], row["duration_s"], row["repeat"]) == ("10", "2", "1")
    assert (row["ms"], row["n"], row["rate"]) == ("100", "", "")
    check_ok_row(row, run, meta["servers"][server_key])
    assert run_.stdout.count(cell_id) == 1  # the summary table
    assert str(run.csv_path) in run_.stdout

    (summary,) = run.summaries.glob("*.json")
    data = json.loads(summary.read_text())
    assert data["lab"]["endpoint"] == endpoint
    assert data["lab"]["vus"] == 10
    assert loadgen.parse_summary(data)["requests"] == int(row["requests"])
    assert {p.name.rsplit("-", 1)[1] for p in run.logs.iterdir()} == {"k6.log", "server.log"}
    assert_nothing_left(run_, out)


# --- a server that dies during its cell --------------------------------------------------


def test_server_killed_mid_cell(tmp_path: Path, lab_run: Callable[..., LabRun]) -> None:
    out = tmp_path / "out"
    run_ = lab_run(
        "bench", "go", "sync", "--ms", "20", "--vus", "5", "--duration", "3s", "--repeat", "2",
        "--out", str(out),
    )  # fmt: skip
    # the first cell's k6 is running: kill that cell's server, by its PID
    wait_for("the first cell's k6", lambda: run_.live(is_cell_k6), 30, run_)
    (gin,) = wait_for("the gin server", lambda: run_.live(is_gin), 5, run_)
    time.sleep(0.5)
    run_dir = RunDir(out / "latest")
    assert run_dir.rows() == []  # still the first cell
    gin.send_signal(signal.SIGKILL)

    run, first, second = first_of_two_failed(run_, out)
    assert "the server was killed by SIGKILL during the cell" in first["error"]
    assert "\n" not in first["error"]
    assert first["repeat"] != second["repeat"]
    meta = check_meta(run, "complete", "gin/release", "gin")
    check_ok_row(second, run, meta["servers"]["gin/release"])
    assert len(run_.ports) == 2  # a fresh server (and port) per cell (k6's cost is given)
    assert_nothing_left(run_, out)


# --- Ctrl-C, then --resume ---------------------------------------------------------------


def test_interrupt_then_resume(tmp_path: Path, lab_run: Callable[..., LabRun]) -> None:
    out = tmp_path / "out"
    args = ("bench", "go", "async", "--ms", "20", "--vus", "5", "--duration", "2s")
    run_ = lab_run(*args, "--repeat", "3", "--out", str(out))
    latest = out / "latest" / "results.csv"

    def one_row() -> bool:
        return latest.exists() and len(RunDir(out / "latest").rows()) == 1

    wait_for("the first row", one_row, 40, run_)
    wait_for("the second cell's k6", lambda: run_.live(is_cell_k6), 20, run_)
    time.sleep(0.3)
    sent = time.monotonic()
    run_.proc.send_signal(signal.SIGINT)
    code = run_.wait(timeout=15)
    took = time.monotonic() - sent
    assert code == 130, run_.stderr
    assert took < 5.0, f"the runner took {took:.1f} s to stop"
    assert_nothing_left(run_, out)

    run = only_run(out)
    assert f"--resume {run.run_id}" in run_.stderr
    meta = run.meta().to_json()
    assert meta["status"] == "interrupted"
    assert len(meta["cells"]) == 3
    (kept,) = csv_rows(run)
    check_ok_row(kept, run, meta["servers"]["gin/release"])

    # the command the runner printed, as a user would paste it (just runs `python -m lab`)
    printed = run_.stderr.strip().splitlines()[-1].split()
    assert printed[:4] == ["just", "bench", "go", "async"]
    again = lab_run(*printed[1:])
    assert again.wait(timeout=60) == 0, again.stderr
    assert "2 cells to run (1 already done)" in again.stderr
    assert only_run(out).path == run.path  # no new run folder
    rows = csv_rows(run)
    assert len(rows) == 3
    assert rows[0] == kept
    assert len({r["cell"] for r in rows}) == 3
    assert {r["cell"] for r in rows} == {Cell.from_json(c).id for c in meta["cells"]}
    assert sorted(r["repeat"] for r in rows) == ["1", "2", "3"]
    meta = check_meta(run, "complete", "gin/release", "gin")
    for row in rows:
        check_ok_row(row, run, meta["servers"]["gin/release"])
    assert_nothing_left(again, out)


# --- user mistakes -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def held_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture(scope="module")
def closed_port() -> int:
    return server.free_port()


TARGET_NAMES = [t.name for t in discover()]
PROFILES = sorted({p for t in discover() for p in t.profiles})


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["bench", "nope", "sync"], ["unknown target 'nope'", *TARGET_NAMES]),
        (["bench", "go", "nope"], ["unknown endpoint 'nope'", *BENCH]),
        (["bench", "go", "health"], ["unknown endpoint 'health'", *BENCH]),
        (["bench-all", "--matrix", "nope"], ["unknown matrix 'nope'", "quick", "full"]),
        (["bench", "go", "sync", "--matrix", "nope"], ["unknown matrix 'nope'", "quick"]),
        (["bench", "go", "sync", "--profile", "nope"], ["unknown gin profile 'nope'", "release"]),
        (["bench-all", "--profile", "nope"], ["unknown profile 'nope'", *PROFILES]),
        (["bench", "go", "sync", "--vus", "0"], ["--vus", "expected integers >= 1"]),
        (["bench", "go", "sync", "--vus", "ten"], ["--vus", "expected integers"]),
        (["bench", "go", "sync", "--rate", "0"], ["--rate", "expected integers >= 1"]),
        (["bench", "go", "sync", "--repeat", "0"], ["--repeat", "expected an integer >= 1"]),
        (["bench", "go", "sync", "--duration", "10"], ["--duration", "10s, 500ms or 1m30s"]),
        (["bench", "go", "sync", "--ms", "99999"], ["ms must be between 0 and 10000"]),
        (["bench", "go", "gather", "--n", "0"], ["n must be between 1 and 100"]),
        (["bench", "go", "sync", "--url", "http://10.1.2.3:8000"], ["not a loopback address"]),
        (["bench", "go", "sync", "--url", "ftp://127.0.0.1:21"], ["--url must look like"]),
        (["bench", "go", "sync", "--url", "http://127.0.0.1:{closed}"], ["cannot reach"]),
        (["bench", "go", "sync", "--port", "{held}"], ["port {held} is already in use"]),
        (["bench", "go", "cpu", "--ms", "50"], ["--ms does not apply to /cpu", "it takes n"]),
        (["bench", "go", "sync", "--n", "5"], ["--n does not apply to /sync", "it takes ms"]),
        (["bench", "go", "hello", "--n", "5"], ["--n does not apply to /hello", "no parameters"]),
        (["bench", "go", "sync", "--resume", "x", "--vus", "5"], ["--resume", "drop --vus"]),
    ],
    ids=lambda v: " ".join(v) if v and v[0].startswith("bench") else None,
)
def test_bad_input(
    tmp_path: Path, held_port: int, closed_port: int, args: list[str], expected: list[str]
) -> None:
    out = tmp_path / "out"
    fill = {"held": held_port, "closed": closed_port}
    done = run_lab(*[a.format(**fill) for a in args], "--out", str(out))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for text in expected:
        assert text.format(**fill) in lines[0]
    assert done.stdout == ""
    assert not out.exists(), "a run folder was created for a bad command"


@pytest.mark.parametrize(
    "args",
    [
        ["--port", "70000"],
        ["--port", "0"],
        ["--canary-rate", "-1"],
        ["--resume", "19990101-000000"],
    ],
    ids=["port-out-of-range", "port-zero", "negative-canary-rate", "unknown-resume"],
)
def test_bad_values_and_unknown_runs(tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "out"
    done = run_lab("bench", "go", "sync", "--duration", "1s", *args, "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not out.exists() or not [p for p in out.iterdir() if p.name != "latest"]


# --- runner helpers ----------------------------------------------------------------------


def test_cpu_split(monkeypatch: pytest.MonkeyPatch) -> None:
    def affinity(cpus: set[int]) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: cpus)

    affinity({0, 1})
    assert cpu_split() == ([0], [1])
    affinity({3, 0, 2})
    assert cpu_split() == ([0, 2], [3])  # the server gets the larger half
    affinity({0, 1, 2, 3})
    assert cpu_split() == ([0, 1], [2, 3])
    assert cpu_split(pin=False) == (None, None)
    affinity({5})
    assert cpu_split() == (None, None)


def test_estimate_and_done_cells(tmp_path: Path) -> None:
    cells = [Cell("gin", "release", "sync", (("ms", 1),), 1, None, "2s", r) for r in (1, 2, 3)]
    # the cells, the host's stability check before them (no probe: too short a run)
    check = stability.check_seconds() + cpuspeed.START_DELAY_S
    assert estimate_s(cells) == pytest.approx(
        3 * 2.0 + 3 * OVERHEAD_S["go"] + check + LOADGEN_COST_S
    )
    run = RunDir.create(tmp_path)
    run.write_meta(RunMeta(cells=[c.to_json() for c in cells]))
    run.append(CellResult(cell=cells[1].id, status="ok"))
    run.append(CellResult(cell=cells[2].id, status="error", error="k6 was killed by SIGKILL"))
    assert [Cell.from_json(c) for c in run.meta().cells or []] == cells
    assert run.done() == {cells[1].id}  # an error row is not done: resume runs its cell again
    assert run.retry_errors() == 1
    assert [r.cell for r in run.rows()] == [cells[1].id]
    with run.retried_path.open(newline="") as f:
        (moved,) = csv.DictReader(f)
    assert (moved["cell"], moved["error"]) == (cells[2].id, "k6 was killed by SIGKILL")
    assert run.retry_errors() == 0


# --- a JIT's warm-up ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "warmed"),
    [("hello", True), ("sync", False)],
    ids=["cpu-bound-warmed", "vus-bound-not"],
)
def test_jit_warm_up_where_the_prediction_needs_it(
    tmp_path: Path, lab_run: Callable[..., LabRun], endpoint: str, warmed: bool
) -> None:
    """jdkhttp says `jit`: its /hello (bound by its CPU) is warmed up until steady before the
    calibration, thousands of requests; its /sync of 500 ms at 10 VUs (bound by the VUs: the
    prediction hardly moves whatever the CPU) is not, and the row says so with 0."""
    out = tmp_path / "out"
    ms = [] if endpoint == "hello" else ["--ms", "500"]
    run_ = lab_run(
        "bench", "jdkhttp", endpoint, "--duration", "2s", "--vus", "10", *ms, "--out", str(out)
    )
    assert run_.wait(timeout=120) == 0, run_.stderr
    (row,) = csv_rows(only_run(out))
    assert row["status"] == "ok", row["error"]
    # its compiler threads' share of its CPU during the load, read from /proc by their names
    assert 0.0 <= float(row["jit_compiling_pct"]) <= 100.0, row
    # and during the calibration, left out of its server_cpu_ms
    assert 0.0 <= float(row["jit_calibration_pct"]) <= 100.0, row
    if warmed:
        assert float(row["warm_up_s"]) > 0 and int(row["warm_up_requests"]) > 1000, row
    else:
        assert (row["warm_up_s"], row["warm_up_requests"], row["warm_up_steady"]) == ("0", "0", "")
    assert_nothing_left(run_, out)
