"""Runs the shared k6 script (k6/lab.js) for one cell and reads its summary."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import ROOT
from lab.contract import load
from lab.matrix import Cell

SCRIPT = ROOT / "k6" / "lab.js"
LOCAL_K6 = ROOT / ".tools" / "bin" / "k6"
CANARY_RATE = 5  # /hello requests per second beside the main load


class K6Missing(RuntimeError):
    pass


def binary() -> str:
    if LOCAL_K6.is_file():
        return str(LOCAL_K6)
    found = shutil.which("k6")
    if not found:
        raise K6Missing("k6 is not installed: run 'just setup'")
    return found


def environment(cell: Cell, base_url: str, summary: Path, canary_rate: int) -> dict[str, str]:
    """k6's environment: the cell's values only. Variables the script reads that the cell does
    not set (a RATE or N left in the user's shell) must not leak in."""
    script_vars = {"RATE", "ITERATIONS", "TIMEOUT", "GRACEFUL_STOP"} | {
        p.name.upper() for e in load().endpoints for p in e.params
    }
    env = {
        **{k: v for k, v in os.environ.items() if k not in script_vars},
        "K6_NO_USAGE_REPORT": "true",
        "BASE_URL": base_url,
        "ENDPOINT": cell.endpoint,
        "VUS": str(cell.vus),
        "DURATION": cell.duration,
        "CANARY_RATE": str(canary_rate),
        "SUMMARY": str(summary),
    }
    env.update({name.upper(): str(value) for name, value in cell.params})
    if cell.rate:
        env["RATE"] = str(cell.rate)
    if cell.iterations:
        # A fixed number of requests (a post's sequential client or burst): no canary, whose
        # requests the post did not send and whose DURATION would outlast the iterations.
        env["ITERATIONS"] = str(cell.iterations)
        env["CANARY_RATE"] = "0"
    return env


@dataclass
class K6Run:
    proc: subprocess.Popen[bytes]
    summary: Path
    log: Path

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """Stop k6 (it may be mid-run after Ctrl-C): SIGTERM, then SIGKILL."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""


def start(
    cell: Cell,
    base_url: str,
    summary: Path,
    log: Path,
    cpus: list[int] | None = None,
    canary_rate: int = CANARY_RATE,
) -> K6Run:
    # --address "": no REST API, so cells never collide on its port 6565.
    command = [binary(), "run", "--quiet", "--no-color", "--address", "", str(SCRIPT)]
    if cpus:
        command = ["taskset", "-c", ",".join(map(str, cpus)), *command]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment(cell, base_url, summary, canary_rate),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the runner, which stops k6 itself
        )
    return K6Run(proc, summary, log)


def _values(metrics: dict[str, Any], name: str, scenario: str) -> dict[str, float]:
    return metrics.get(f"{name}{{scenario:{scenario}}}", {}).get("values", {})


def parse_summary(data: dict[str, Any]) -> dict[str, float | int | None]:
    """The row's load-generator columns from a k6 summary (handleSummary's data)."""
    metrics = data.get("metrics", {})
    duration = _values(metrics, "http_req_duration", "main")
    reqs = _values(metrics, "http_reqs", "main")
    failed = _values(metrics, "http_req_failed", "main")
    dropped = _values(metrics, "dropped_iterations", "main")
    canary = _values(metrics, "http_req_duration", "canary")

    def ms(values: dict[str, float], key: str) -> float | None:
        return values.get(key)

    return {
        "requests": int(reqs.get("count", 0)),
        "rps": reqs.get("rate"),
        "failed_rate": failed.get("rate"),
        "dropped": int(dropped.get("count", 0)),  # k6 leaves the metric out when none dropped
        "lat_avg_ms": ms(duration, "avg"),
        "lat_p50_ms": ms(duration, "p(50)"),
        "lat_p90_ms": ms(duration, "p(90)"),
        "lat_p95_ms": ms(duration, "p(95)"),
        "lat_p99_ms": ms(duration, "p(99)"),
        "lat_max_ms": ms(duration, "max"),
        "canary_p50_ms": ms(canary, "p(50)"),
        "canary_p99_ms": ms(canary, "p(99)"),
    }


def read_summary(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
