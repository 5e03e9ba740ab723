"""The lab CLI as a watched subprocess (`python -m lab ARGS`, every process below it recorded,
so a test can prove that nothing of a run is left afterwards), and readers of the run folder
it writes; commands run to their end in the repository (the lab CLI, `k6 inspect`). Used by
the end-to-end tests and by the unit tests of CLI mistakes and of k6's environment."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from lab import ROOT, model
from lab.contract import load
from lab.proc import server
from lab.run import loadgen
from lab.run.runner import cpu_split
from lab.rundir import COLUMNS, KNOBS, RunDir

# The runner's environment: nothing from the shell that k6 or the servers would read.
SHELL_KNOBS = {"RATE", "MS", "N", "TIMEOUT", "GRACEFUL_STOP", "PORT", "HOST", "PYTHON", "LAB_K6"}
ENV = {k: v for k, v in os.environ.items() if k not in SHELL_KNOBS | set(KNOBS)}
# The machine's one-run lock, but this test session's own: a `just bench` someone runs
# meanwhile must not fail these tests (the lock itself is tested with this file too).
ENV["LAB_LOCK"] = str(Path(tempfile.gettempdir()) / f"lab-test-{os.getpid()}.lock")
# k6's cost per request, given to the tests' runs (recorded as "given: LAB_K6_US"): each run
# saves the 3-s measurement on gin and its start, about 4 s; tests/e2e/test_model_e2e.py
# measures it for real, once.
K6_US = "60"
ENV["LAB_K6_US"] = K6_US
# The host's speed check before the first cell, 0.5 s instead of 3 (run.json's stability
# records it): 2.5 s saved a run; tests/unit/test_stability.py tests the check itself.
ENV["LAB_HOST_CHECK_S"] = "0.5"
VERDICTS = {"as predicted", "below model", "above model", "loadgen-bound", "no model"}
BENCH = [e.name for e in load().bench_endpoints()]


# --- the runner as a watched subprocess --------------------------------------------------


class LabRun:
    """`python -m lab ARGS` with every process below it recorded (and its PORT, if any)."""

    def __init__(self, args: list[str], logs: Path, env: dict[str, str] | None = None) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        n = len(list(logs.glob("*.out")))
        self.stdout_path = logs / f"{n}.out"
        self.stderr_path = logs / f"{n}.err"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "lab", *args],
                cwd=ROOT,
                env={**ENV, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        self.seen: dict[int, psutil.Process] = {}
        self.ports: set[int] = set()
        self._no_port: set[int] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        try:
            top = psutil.Process(self.proc.pid)
        except psutil.NoSuchProcess:
            return
        while not self._done.is_set() and self.proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                for p in top.children(recursive=True):
                    with self._lock:
                        if p.pid not in self.seen:
                            self.seen[p.pid] = p
                            self._no_port.add(p.pid)
            for pid in list(self._no_port):  # environ changes at exec: read until it has PORT
                with contextlib.suppress(psutil.Error):
                    env = self.seen[pid].environ()
                    if "LAB_CONTRACT" in env and env.get("PORT", "").isdigit():
                        self.ports.add(int(env["PORT"]))
                        self._no_port.discard(pid)
            time.sleep(0.02)

    def live(self, match: Callable[[psutil.Process], bool]) -> list[psutil.Process]:
        with self._lock:
            procs = list(self.seen.values())
        found = []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and match(p):
                    found.append(p)
        return found

    def leftovers(self) -> list[str]:
        found = []
        for p in self.live(lambda _: True):
            with contextlib.suppress(psutil.Error):
                found.append(f"{p.pid} {' '.join(p.cmdline())[:200]}")
        return found

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._done.set()
            self._thread.join(2)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def kill_all(self) -> None:
        """Test teardown: end the runner and whatever it left, by PID only."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._done.set()
        for p in self.live(lambda _: True):
            with contextlib.suppress(psutil.Error):
                p.kill()


def is_k6(p: psutil.Process) -> bool:
    """k6 loading a cell (not `k6 version`, which the run's provenance asks)."""
    return p.name() == "k6" and "run" in p.cmdline()


def is_cell_k6(p: psutil.Process) -> bool:
    """A cell's k6, not the run's calibration of k6 (which writes to calibration/)."""
    return is_k6(p) and "/k6/" in p.environ().get("SUMMARY", "")


def is_gin(p: psutil.Process) -> bool:
    return p.cwd() == str(ROOT / "go" / "gin") and p.name() == "gin"


def run_in_root(
    command: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """A command in the repository's root, to its end, its output captured as text (its exit
    status is the caller's to check)."""
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def run_lab(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m lab ARGS` to its end, output captured (for commands that end by themselves)."""
    return run_in_root([sys.executable, "-m", "lab", *args], {**ENV, **(env or {})}, timeout)


def k6_inspect(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """k6 reads the environment at init (inspect: the script's options, no requests)."""
    command = [loadgen.binary(), "inspect", "--include-system-env-vars", str(loadgen.SCRIPT)]
    return run_in_root(command, env, 30)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """A user mistake's stderr: one line, no traceback (exit 2 is the caller's to check)."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def wait_for(what: str, check: Callable[[], Any], timeout: float, run: LabRun) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if run.proc.poll() is not None:
            pytest.fail(f"runner ended ({run.proc.returncode}) before {what}:\n{run.stderr}")
        time.sleep(0.02)
    pytest.fail(f"no {what} within {timeout} s:\n{run.stderr}")


def assert_nothing_left(run: LabRun, out: Path) -> None:
    assert run.seen, "the watcher saw no process of the run"
    assert not run.leftovers(), f"processes left by the run: {run.leftovers()}"
    for port in run.ports:
        assert not server.port_in_use(port), f"port {port} still in use"
    stray_k6 = []
    for p in psutil.process_iter(["name"]):
        with contextlib.suppress(psutil.Error):
            if p.info["name"] == "k6" and p.environ().get("SUMMARY", "").startswith(str(out)):
                stray_k6.append(p.pid)
    assert not stray_k6, f"k6 left running: {stray_k6}"


# --- reading a run folder ----------------------------------------------------------------


def first_of_two_failed(run: LabRun, out: Path) -> tuple[RunDir, dict[str, str], dict[str, str]]:
    """A run of two cells whose first one failed, to its end: exit status 1, the failure
    counted on stderr. Its folder and its two rows (the first an error)."""
    code = run.wait(timeout=60)
    assert code == 1, run.stderr
    assert "1 of 2 cells failed" in run.stderr
    folder = only_run(out)
    first, second = csv_rows(folder)
    assert first["status"] == "error"
    return folder, first, second


def only_run(out: Path) -> RunDir:
    runs = [p for p in out.iterdir() if p.name != "latest"]
    assert len(runs) == 1, runs
    run = RunDir(runs[0])
    assert (out / "latest").resolve() == run.path.resolve()
    return run


def csv_rows(run: RunDir) -> list[dict[str, str]]:
    with run.csv_path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        return list(reader)


def number(row: dict[str, str], key: str) -> float:
    assert row[key] != "", f"{key} is empty in {row['cell']}"
    return float(row[key])


def check_ok_row(row: dict[str, str], run: RunDir, info: dict[str, Any]) -> None:
    """A complete row of a cell that went well."""
    assert row["status"] == "ok", row["error"]
    assert row["error"] == ""
    assert row["run_id"] == run.run_id
    assert int(row["requests"]) > 0
    assert number(row, "rps") > 0
    assert number(row, "failed_rate") == 0
    assert (row["failed_requests"], row["failures"], row["restarts"]) == ("0", "", "0")
    assert int(row["dropped"]) == 0
    p50, p95, p99 = (number(row, k) for k in ("lat_p50_ms", "lat_p95_ms", "lat_p99_ms"))
    assert 0 < p50 <= p95 <= p99 <= number(row, "lat_max_ms")
    assert number(row, "canary_p50_ms") > 0
    assert number(row, "server_cpu_pct") >= 0
    assert number(row, "k6_cpu_pct") > 0
    assert number(row, "server_rss_mb") > 0
    assert row["loadgen_bound"] in ("true", "false")
    assert number(row, "service_ms") > 0
    assert number(row, "predicted_rps") > 0
    assert number(row, "predicted_latency_ms") > 0
    assert number(row, "efficiency") > 0
    assert row["verdict"] in VERDICTS
    # the verdict's tolerance, from the run's stability check (a wait: 5 %)
    assert model.TOLERANCE <= number(row, "tolerance") <= model.TOLERANCE_MAX
    assert row["tolerance_why"].startswith(f"±{number(row, 'tolerance'):.0%}")
    tolerance = number(row, "tolerance")
    assert row["verdict"] == model.verdict("ok", number(row, "efficiency"), "", tolerance)
    assert int(row["workers"]) == info["workers"] >= 1
    capacity = info["capacity"][row["endpoint"]]
    assert row["capacity"] == ("" if capacity is None else str(capacity))
    server_cpus, k6_cpus = cpu_split()
    assert row["server_cpus"] == " ".join(map(str, server_cpus or []))
    assert row["k6_cpus"] == " ".join(map(str, k6_cpus or []))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["started_at"])


def check_meta(run: RunDir, status: str, server_key: str, framework: str) -> dict[str, Any]:
    meta = run.meta().to_json()
    assert meta["run_id"] == run.run_id
    assert meta["status"] == status
    assert re.fullmatch(r"[0-9a-f]{40}", meta["git_commit"])
    assert isinstance(meta["git_dirty"], bool)
    assert meta["machine"]["cpu_model"]
    assert meta["machine"]["cores"] == os.cpu_count()
    assert meta["versions"]["k6"].startswith("k6 v")
    assert meta["versions"]["python"]
    info = meta["servers"][server_key]
    assert info["framework"] == framework
    assert set(info["capacity"]) == set(BENCH)
    assert meta["command"][0] == "bench"
    assert meta["started_at"] and meta["finished_at"]
    # the host's CPU speed, checked before the first cell on every CPU the run used
    server_cpus, k6_cpus = cpu_split()
    checked = sorted({*(server_cpus or []), *(k6_cpus or [])}) or sorted(os.sched_getaffinity(0))
    assert meta["stability"]["cpus"] == checked
    assert meta["stability"]["check"]["cv"]["0.1"] >= 0
    assert abs(meta["stability"]["check"]["seconds"] - float(ENV["LAB_HOST_CHECK_S"])) < 0.1
    assert isinstance(meta["stability"]["steady"], bool)
    return meta
