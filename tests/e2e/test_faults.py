"""Fault drills (issues 10 and 14), one test per row of issue 10's table and per child that
can die mid-cell: real runner, real servers and k6, 2 s cells. Each proves the run's
outcome (rows, exit status, run.json) and that nothing of it is left afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from harness.labrun import (
    K6_US,
    LabRun,
    assert_nothing_left,
    check_meta,
    check_ok_row,
    csv_rows,
    first_of_two_failed,
    is_cell_k6,
    one_line_error,
    only_run,
    run_lab,
    wait_for,
)

from lab.matrix import Cell
from lab.proc import server
from lab.run.runner import Options, Runner
from lab.rundir import RunDir

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e


def is_upstream(p: psutil.Process) -> bool:
    return p.name() == "upstream"


def gunicorn_worker(runner: LabRun) -> Callable[[psutil.Process], bool]:
    """A child of the gunicorn master, which is the runner's child."""

    def match(p: psutil.Process) -> bool:
        parent = p.parent()
        return (
            parent is not None
            and parent.name() == "gunicorn"
            and (parent.ppid() == runner.proc.pid)
        )

    return match


# --- issue 14: a child dies mid-cell -------------------------------------------------------


@pytest.mark.parametrize("victim", ["upstream", "k6"])
def test_child_killed_mid_cell(tmp_path: Path, lab_run: Callable[..., LabRun], victim: str) -> None:
    out = tmp_path / "out"
    run_ = lab_run(
        "bench", "go", "upstream", "--ms", "10", "--n", "2", "--vus", "10", "--duration", "2s",
        "--repeat", "2", "--out", str(out),
    )  # fmt: skip
    wait_for("the first cell's k6", lambda: run_.live(is_cell_k6), 40, run_)
    match = is_upstream if victim == "upstream" else is_cell_k6
    (proc,) = wait_for(victim, lambda: run_.live(match), 5, run_)
    time.sleep(0.7)
    proc.send_signal(signal.SIGKILL)

    run, first, second = first_of_two_failed(run_, out)
    assert first["verdict"] == "error" and first["efficiency"] == ""  # no model verdict
    if victim == "upstream":
        assert f"the upstream service (pid {proc.pid}) was killed by SIGKILL" in first["error"]
        # its 502s are failures, named, and not throughput
        assert int(first["failed_requests"]) > 0
        assert "502×" in first["failures"] and "502×" in first["error"]
        # the killed upstream's log kept in the run's folder beside its successor's
        assert (run.logs / "upstream.log").is_file() and (run.logs / "upstream-2.log").is_file()
    else:
        assert "k6 was killed by SIGKILL and wrote no summary" in first["error"]
    meta = check_meta(run, "complete", "gin/release", "gin")
    check_ok_row(second, run, meta["servers"]["gin/release"])  # a fresh upstream and k6
    # run.json's upstream: on k6's CPUs, its scheduling said, started again after its death
    upstream = meta.get("upstream") or {}
    assert upstream.get("starts") == (2 if victim == "upstream" else 1), upstream
    assert upstream.get("cpus") == meta["cpus"]["k6"], upstream
    assert str(upstream.get("scheduling")).startswith(("SCHED_FIFO ", "normal (")), upstream
    assert_nothing_left(run_, out)


# --- issue 10: the runner itself dies --------------------------------------------------------


def test_kill_9_mid_cell_leaves_nothing_then_resume_completes(
    tmp_path: Path, lab_run: Callable[..., LabRun]
) -> None:
    """gunicorn with two uvicorn workers (grandchildren) on /upstream (the upstream service)."""
    out = tmp_path / "out"
    args = ["bench", "fastapi", "upstream", "--profile", "gunicorn", "--ms", "10", "--n", "2"]
    run_ = lab_run(
        *args, "--vus", "5", "--duration", "2s", "--repeat", "2", "--out", str(out),
        env={"WORKERS": "2"},
    )  # fmt: skip
    wait_for("the first cell's k6", lambda: run_.live(is_cell_k6), 60, run_)
    # gunicorn, its 2 workers, the upstream service, k6 (and the supervisor)
    wait_for("the workers", lambda: len(run_.live(lambda p: p.name() == "gunicorn")) >= 3, 5, run_)
    assert run_.live(is_upstream)
    run_.proc.send_signal(signal.SIGKILL)
    run_.proc.wait(5)
    killed = time.monotonic()
    deadline = killed + 2.0
    while time.monotonic() < deadline and (run_.leftovers() or _bound(run_.ports)):
        time.sleep(0.05)
    assert not run_.leftovers(), f"left after 2 s: {run_.leftovers()}"
    assert not _bound(run_.ports)
    run = only_run(out)
    assert run.mark_if_died().status == "died"  # the supervisor marked it

    again = lab_run("bench", "fastapi", "upstream", "--resume", run.run_id, "--out", str(out))
    assert again.wait(timeout=90) == 0, again.stderr
    rows = csv_rows(run)
    assert len(rows) == 2
    meta = check_meta(run, "complete", "fastapi/gunicorn", "fastapi")
    for row in rows:
        check_ok_row(row, run, meta["servers"]["fastapi/gunicorn"])
    assert_nothing_left(again, out)


def _bound(ports: set[int]) -> list[int]:
    return [p for p in ports if server.port_in_use(p)]


def test_double_sigterm_mid_cell_stops_everything(
    tmp_path: Path, lab_run: Callable[..., LabRun]
) -> None:
    """`timeout` signals the group and `just` forwards: the runner gets SIGTERM twice."""
    out = tmp_path / "out"
    run_ = lab_run("bench", "go", "sync", "--ms", "10", "--vus", "5", "--duration", "20s",
                   "--out", str(out))  # fmt: skip
    wait_for("k6", lambda: run_.live(is_cell_k6), 40, run_)
    time.sleep(1.0)
    sent = time.monotonic()
    run_.proc.send_signal(signal.SIGTERM)
    time.sleep(0.01)
    run_.proc.send_signal(signal.SIGTERM)
    assert run_.wait(timeout=25) == 130, run_.stderr
    took = time.monotonic() - sent
    assert took < 3, f"the runner took {took:.1f} s to stop (the cell had 19 s to go)"
    assert "Traceback" not in run_.stderr
    assert only_run(out).meta().status == "interrupted"
    assert_nothing_left(run_, out)


# --- mistakes and environment faults: one line, no traceback, nothing started ------------


MALFORMED = {
    "syntax": b"vus = [\n",
    "vus-text": b'vus = "abc"\n',
    "unknown-key": b"nope = 1\n",
    "duration-number": b"duration = 5\n",
    "rate-text": b'rate = "abc"\n',
    "params-number": b"params = 3\n",
    "profiles-number": b"profiles = 7\n",
    "repeat-text": b'repeat = "2"\n',
    "not-utf8": b'description = "\xff\xfe"\n',
    "vus-float": b"vus = [1.5]\n",
    "param-text": b'[params]\nms = "x"\n',
    "param-unknown": b"[params]\nnope = 1\n",
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_matrix(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.toml"
    path.write_bytes(MALFORMED[name])
    out = tmp_path / "out"
    done = run_lab("bench-all", "--matrix", str(path), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert str(path) in one_line_error(done)
    assert not out.exists(), "a run folder (and a server) for a bad matrix"


def _read_only_dir(tmp_path: Path) -> Path:
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:  # root writes anywhere but on a read-only mount
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)],
                              capture_output=True, check=False)  # fmt: skip
        if done.returncode != 0:
            pytest.skip("root without mount: no read-only folder to test with")
    else:
        ro.chmod(0o555)
    return ro


@pytest.mark.parametrize("where", ["read-only", "/proc/nope", "a-file"])
def test_unwritable_out(tmp_path: Path, where: str) -> None:
    if where == "read-only":
        out = _read_only_dir(tmp_path)
    elif where == "a-file":
        out = tmp_path / "file"
        out.write_text("")
    else:
        out = Path(where)
    try:
        done = run_lab("bench", "go", "sync", "--duration", "1s", "--out", str(out))
    finally:
        if where == "read-only" and os.geteuid() == 0:
            subprocess.run(["umount", str(out)], check=False)
    assert done.returncode == 2, done.stderr
    assert f"cannot write results to {out}" in one_line_error(done)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tiny tmpfs")
def test_full_disk(tmp_path: Path) -> None:
    out = tmp_path / "full"
    out.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(out)], check=True)
    try:
        done = run_lab("bench", "go", "sync", "--ms", "10", "--vus", "20", "--duration", "2s",
                       "--repeat", "2", "--out", str(out), timeout=90)  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 1, done.stderr
        assert "full" in done.stderr or "No space left" in done.stderr
        run = only_run(out)
        assert not list(run.path.glob("run.json*tmp"))
        assert run.mark_if_died().status != "running"
        for row in run.rows():
            assert row.status == "ok" or "disk is full" in row.error
    finally:
        subprocess.run(["umount", str(out)], check=False)


def test_hung_k6_is_an_error_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A k6 that never ends (and ignores SIGTERM): the cell is an error, not a traceback."""
    fake = tmp_path / "k6"
    fake.write_text("#!/bin/sh\ntrap '' TERM\nsleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setenv("LAB_K6", str(fake))
    monkeypatch.setenv("LAB_K6_US", K6_US)  # or the fake k6 hangs k6's own measurement, 15 s
    run = RunDir.create(tmp_path / "out")
    runner = Runner(run, Options(k6_margin_s=1.0, pin=False))
    before = {p.pid for p in psutil.Process().children(recursive=True)}  # session fixtures
    cell = Cell("gin", "release", "sync", (("ms", 1),), 2, None, "1s", 1)
    started = time.monotonic()
    row = runner.cell(cell, 1)
    assert row.status == "error"
    assert "k6 did not finish within 2 s (hung?) and was stopped" in row.error
    assert time.monotonic() - started < 30
    left = []
    for p in psutil.Process().children(recursive=True):  # k6, its sleep, the server
        with contextlib.suppress(psutil.Error):
            if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE:
                left.append(" ".join(p.cmdline()))
    assert not left


def test_a_second_run_is_refused_while_one_runs(
    tmp_path: Path, lab_run: Callable[..., LabRun]
) -> None:
    out = tmp_path / "out"
    first = lab_run("bench", "go", "sync", "--ms", "10", "--vus", "2", "--duration", "3s",
                    "--out", str(out))  # fmt: skip
    wait_for("the first run's k6", lambda: first.live(is_cell_k6), 40, first)
    run = RunDir((out / "latest").resolve())
    # a new run, elsewhere: the machine's lock names the run that holds it
    other = tmp_path / "other"
    done = run_lab("bench", "go", "sync", "--duration", "1s", "--out", str(other))
    assert done.returncode == 2
    line = one_line_error(done)
    assert f"run {run.run_id}" in line and f"pid {first.proc.pid}" in line
    assert "--allow-concurrent" in line
    assert not other.exists() or not list(other.iterdir())
    # resuming the live run itself, even past the lock: refused, naming its process
    done = run_lab("bench", "go", "sync", "--resume", run.run_id, "--out", str(out),
                   "--allow-concurrent")  # fmt: skip
    assert done.returncode == 2
    assert f"run {run.run_id} is still running (pid {first.proc.pid})" in one_line_error(done)
    assert first.wait(timeout=60) == 0, first.stderr
    assert (out / "latest").resolve() == run.path.resolve()
    assert_nothing_left(first, out)


def test_worker_killed_mid_cell_is_flagged(tmp_path: Path, lab_run: Callable[..., LabRun]) -> None:
    out = tmp_path / "out"
    run_ = lab_run("bench", "flask", "sync", "--profile", "gunicorn", "--ms", "20", "--vus", "4",
                   "--duration", "3s", "--out", str(out), env={"WORKERS": "2"})  # fmt: skip
    wait_for("k6", lambda: run_.live(is_cell_k6), 40, run_)
    is_worker = gunicorn_worker(run_)
    workers = wait_for("two workers", lambda: len(run_.live(is_worker)) >= 2 and
                       run_.live(is_worker), 5, run_)  # fmt: skip
    time.sleep(0.7)
    workers[0].send_signal(signal.SIGKILL)
    assert run_.wait(timeout=60) == 1, run_.stderr
    (row,) = csv_rows(only_run(out))
    assert row["status"] == "error"
    assert row["restarts"] == "1"
    assert f"pid {workers[0].pid}" in row["error"] and "ended during the cell" in row["error"]
    assert_nothing_left(run_, out)


def test_leftovers_of_a_dead_run_are_stopped(tmp_path: Path) -> None:
    """If even the supervisor died with its runner, the next run finds the dead run's
    processes by their tag and stops them before it measures anything."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # a runner pid that no longer exists
    tag = {"LAB_RUN": "20200101-000000", "LAB_RUNNER": str(gone.pid)}
    left = subprocess.Popen(["sleep", "60"], env={**os.environ, **tag}, start_new_session=True)
    try:
        out = tmp_path / "out"
        done = run_lab("bench", "go", "hello", "--vus", "1", "--duration", "1s", "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert "stopped 1 process left by an earlier run (20200101-000000)" in done.stderr
        assert left.wait(timeout=5) == -signal.SIGKILL
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
