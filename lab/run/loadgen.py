"""Runs the shared k6 script (k6/lab.js) for one cell and reads its summary."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import ROOT
from lab.contract import load
from lab.matrix import Cell
from lab.proc import children

SCRIPT = ROOT / "k6" / "lab.js"
LOCAL_K6 = ROOT / ".tools" / "bin" / "k6"
CANARY_RATE = 5  # /hello requests per second beside the main load


class K6Missing(RuntimeError):
    pass


def binary() -> str:
    chosen = os.environ.get("LAB_K6")  # another k6 build (and the tests' stand-ins)
    if chosen:
        if not shutil.which(chosen):
            raise K6Missing(f"LAB_K6={chosen} is not an executable")
        return chosen
    if LOCAL_K6.is_file():
        return str(LOCAL_K6)
    found = shutil.which("k6")
    if not found:
        raise K6Missing("k6 is not installed: run 'just setup'")
    return found


# k6/lab.js's grace for the requests in flight when the duration ends, where the matrix sets
# none (its GRACEFUL_STOP default; tests/unit checks the two agree)
GRACEFUL_STOP_S = 3.0


def environment(
    cell: Cell, base_url: str, summary: Path, canary_rate: int, graceful_stop_s: float | None = None
) -> dict[str, str]:
    """k6's environment: the cell's values only. Variables the script reads that the cell does
    not set (a RATE or N left in the user's shell) must not leak in. graceful_stop_s: the
    run's grace for the requests in flight at the end (None: lab.js's own)."""
    script_vars = {"RATE", "ITERATIONS", "TIMEOUT", "GRACEFUL_STOP"} | {
        p.name.upper() for e in load().endpoints for p in e.params
    }
    return {
        **{k: v for k, v in os.environ.items() if k not in script_vars},
        "K6_NO_USAGE_REPORT": "true",
        **script_values(cell, base_url, summary, canary_rate, graceful_stop_s),
    }


def script_values(
    cell: Cell,
    base_url: str,
    summary: Path | str,
    canary_rate: int,
    graceful_stop_s: float | None = None,
) -> dict[str, str]:
    """The variables k6/lab.js reads for this cell (what `k6 archive -e` stores)."""
    values = {
        "BASE_URL": base_url,
        "ENDPOINT": cell.endpoint,
        "VUS": str(cell.vus),
        "DURATION": cell.duration,
        "CANARY_RATE": str(canary_rate),
        "SUMMARY": str(summary),
    }
    values.update({name.upper(): str(value) for name, value in cell.params})
    if cell.rate:
        values["RATE"] = str(cell.rate)
    if graceful_stop_s is not None:
        values["GRACEFUL_STOP"] = f"{round(graceful_stop_s * 1000)}ms"
    if cell.iterations:
        # A fixed number of requests (a post's sequential client or burst): no canary, whose
        # requests the post did not send and whose DURATION would outlast the iterations.
        values["ITERATIONS"] = str(cell.iterations)
        values["CANARY_RATE"] = "0"
    return values


@dataclass
class K6Run:
    proc: subprocess.Popen[bytes]
    summary: Path
    log: Path

    def wait(self, timeout: float) -> int | None:
        """k6's exit code, or None if it did not end within `timeout` (it is then stopped)."""
        code = children.wait(self.proc, timeout)
        if code is None:
            self.kill()
        return code

    def kill(self, grace: float = 3.0) -> None:
        """Stop k6 (it may be mid-run after Ctrl-C): SIGTERM, then SIGKILL; bounded."""
        if self.proc.poll() is None:
            children.kill_group(self.proc.pid, signal.SIGTERM)
            if children.wait(self.proc, grace) is None:
                children.kill_group(self.proc.pid, signal.SIGKILL)
                children.wait(self.proc, 2.0)
        children.forget(self.proc, "k6")

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
    graceful_stop_s: float | None = None,
    run_args: list[str] | None = None,
    prefix: list[str] | None = None,
) -> K6Run:
    """One k6 process. run_args: more flags of `k6 run` (an instance's execution segment and
    sample output); prefix: what runs it (`ip netns exec NS`: inside a load host)."""
    # --address "": no REST API, so cells never collide on its port 6565.
    command = [binary(), "run", "--quiet", "--no-color", "--address", "", *(run_args or [])]
    command.append(str(SCRIPT))
    if cpus:
        command = ["taskset", "-c", ",".join(map(str, cpus)), *command]
    command = [*(prefix or []), *command]
    with log.open("wb") as out:
        # A session of its own: Ctrl-C reaches the runner, which stops k6 itself.
        proc = children.spawn(
            command,
            "k6",
            environment(cell, base_url, summary, canary_rate, graceful_stop_s),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return K6Run(proc, summary, log)


@dataclass(frozen=True)
class Instance:
    """Where one of a cell's k6 instances writes and runs."""

    summary: Path  # its handleSummary JSON (lab.js's SUMMARY)
    log: Path
    cpus: list[int] | None = None  # pinned to these
    run_args: tuple[str, ...] = ()  # its segment and sample output (lab.run.segments)
    prefix: tuple[str, ...] = ()  # what runs it: inside a load host's namespace


@dataclass
class LoadGroup:
    """A cell's k6 instances, started together and ended together: one that fails stops the
    others (its cell is an error row), and every path stops them all (kill)."""

    runs: list[K6Run]

    @property
    def pids(self) -> list[int]:
        return [r.proc.pid for r in self.runs]

    def wait(self, timeout: float) -> tuple[int | None, int]:
        """(exit code, instance): the first instance that failed (a non-zero exit) and its
        code, the others stopped; or one that did not end within `timeout` (None; all are
        then stopped); else (0, 0) once every instance ended well. Bounded by timeout."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            codes = [r.proc.poll() for r in self.runs]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                self.kill()
                return codes[failed[0]], failed[0]
            if all(c is not None for c in codes):
                return 0, 0
            if time.monotonic() >= deadline:
                hung = codes.index(None)
                self.kill()
                return None, hung
            time.sleep(children.POLL_S)

    def kill(self) -> None:
        """Stop every instance still running (SIGTERM, then SIGKILL; bounded)."""
        for r in self.runs:
            if r.proc.poll() is None:
                children.kill_group(r.proc.pid, signal.SIGTERM)
        for r in self.runs:
            r.kill()


def start_group(
    cell: Cell,
    base_url: str,
    instances: list[Instance],
    canary_rate: int = CANARY_RATE,
    graceful_stop_s: float | None = None,
) -> LoadGroup:
    """The cell's k6 instances, started one right after the other (k6 takes about 0.2 s to
    start, during which the others start too). One that cannot start stops those started."""
    group = LoadGroup([])
    try:
        for inst in instances:
            group.runs.append(
                start(
                    cell,
                    base_url,
                    inst.summary,
                    inst.log,
                    inst.cpus,
                    canary_rate,
                    graceful_stop_s,
                    list(inst.run_args),
                    list(inst.prefix),
                )
            )
    except BaseException:
        group.kill()
        raise
    return group


def _values(metrics: dict[str, Any], name: str, scenario: str) -> dict[str, float]:
    return metrics.get(f"{name}{{scenario:{scenario}}}", {}).get("values", {})


FAILED_PREFIX = "failed_"
FAILURE_NAMES = {"timeout": "timeout", "network": "no answer", "other": "other status"}


def failures_text(counts: dict[str, int]) -> str:
    """Why requests failed, most frequent first, e.g. '502x14848, timeoutx3' (with a
    multiplication sign)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{FAILURE_NAMES.get(k, k)}×{n}" for k, n in ranked if n)


def failure_counts(data: dict[str, Any]) -> dict[str, int]:
    """Why the main requests failed, from a k6 summary: reason (502, timeout, ...) -> count."""
    return {
        name[len(FAILED_PREFIX) :]: int(m.get("values", {}).get("count", 0))
        for name, m in data.get("metrics", {}).items()
        if name.startswith(FAILED_PREFIX) and "{" not in name
    }


# A closed loop's rate is read from its VUs' cycles where they made at least this many each on
# average; with fewer (a queue whose round lasts seconds), k6's count over its run time, which
# a server busy from the first request to the last leaves unbiased.
MIN_CYCLES_PER_VU = 2
# A queue: its median answer took at least QUEUED times its fastest (its requests waited for
# others' before theirs began). With fewer than QUEUE_CYCLES_PER_VU cycles a VU its rate is
# k6's count over its run time too, not its cycles: they leave out each VU's first answer, and
# in a queue that is the wait of its first round, all VUs at once, from one service to the
# whole round, which the queue serves in its own order (an unfair pool's longest waits are then
# cut from the cycles: Spring's /db read 1.04-1.08 of the model by them, 0.99-1.00 by k6's
# count; CONTRACT.md, 'A closed loop's rate'). With more, the first answer weighs under a
# tenth of a VU's, and the cycles leave out the connections' set-up, which the model does not
# predict.
QUEUED = 2.0
QUEUE_CYCLES_PER_VU = 10


def _count(data: dict[str, Any], name: str) -> float:
    return float(data.get("metrics", {}).get(name, {}).get("values", {}).get("count", 0))


def queued(summaries: list[dict[str, Any]]) -> bool:
    """Whether each instance's median answer took at least QUEUED times its fastest."""
    for s in summaries:
        took = _values(s.get("metrics", {}), "http_req_duration", "main")
        fastest, median = took.get("min"), took.get("med")
        if not fastest or median is None or median < QUEUED * fastest:
            return False
    return bool(summaries)


def closed_loop_rps(summaries: list[dict[str, Any]]) -> float | None:
    """The rate of a closed loop (constant VUs: no RATE, no ITERATIONS) run by one k6 or by
    several in segments: its cycling VUs over their mean cycle (lab.js's lab_cycling_vus,
    lab_cycle_ms and lab_cycles; a cycle is one answer to the same VU's next), which is the sum
    of each VU's own rate, whatever their phases. k6's rate (count over run time) also counts
    the start and the last round's stragglers: up to one cycle in a cell's length, 5 % of a 2-s
    cell of 100-ms requests (measured: CONTRACT.md, 'A closed loop's rate'). None where the
    cycles are too few, the load was a queue of few cycles a VU (QUEUED), or not a closed loop."""
    labs = [s.get("lab") or {} for s in summaries]
    if not labs or any(lab.get("rate") or lab.get("iterations") for lab in labs):
        return None
    vus = sum(_count(s, "lab_cycling_vus") for s in summaries)
    cycles = sum(_count(s, "lab_cycles") for s in summaries)
    cycle_ms = sum(_count(s, "lab_cycle_ms") for s in summaries)
    if vus < 1 or cycles < MIN_CYCLES_PER_VU * vus or cycle_ms <= 0:
        return None
    if cycles < QUEUE_CYCLES_PER_VU * vus and queued(summaries):
        return None
    return vus * cycles / cycle_ms * 1000.0


def rps(summaries: list[dict[str, Any]]) -> float | None:
    """Successful requests per second of a cell's k6 instances (one, or several in segments):
    a closed loop's from its cycles, else k6's rates added; failed requests never count."""
    total = ok = 0
    rates: list[float] = []  # each instance's successful requests over its own run time
    for s in summaries:
        reqs = _values(s.get("metrics", {}), "http_reqs", "main")
        n = int(reqs.get("count", 0))
        good = max(n - _failed(s, n), 0)
        total, ok = total + n, ok + good
        if reqs.get("rate") is not None and n:
            rates.append(reqs["rate"] * good / n)
    if not total:
        return None
    closed = closed_loop_rps(summaries)
    return closed * ok / total if closed is not None else (sum(rates) if rates else None)


def _failed(data: dict[str, Any], total: int) -> int:
    # http_req_failed is a Rate: its "passes" are the failed requests.
    failed = _values(data.get("metrics", {}), "http_req_failed", "main")
    return int(failed.get("passes", round(total * (failed.get("rate") or 0.0))))


def parse_summary(data: dict[str, Any]) -> dict[str, Any]:
    """The row's load-generator columns from a k6 summary (handleSummary's data).
    Throughput counts successful requests only (`rps`); latency is theirs (falling back to
    every request's for summaries of an older lab.js); failed requests are counted and named."""
    metrics = data.get("metrics", {})
    duration = metrics.get("http_req_duration{scenario:main,expected_response:true}", {}).get(
        "values"
    ) or _values(metrics, "http_req_duration", "main")
    reqs = _values(metrics, "http_reqs", "main")
    failed = _values(metrics, "http_req_failed", "main")
    dropped = _values(metrics, "dropped_iterations", "main")
    canary = _values(metrics, "http_req_duration", "canary")

    def ms(values: dict[str, float], key: str) -> float | None:
        return values.get(key)

    total = int(reqs.get("count", 0))
    n_failed = _failed(data, total)
    ok = max(total - n_failed, 0)
    reasons = failure_counts(data)
    return {
        "requests": ok,
        "rps": rps([data]),
        "failed_requests": n_failed,
        "failed_rate": failed.get("rate"),
        "failures": failures_text(reasons),
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
