"""Runs a list of cells into a run folder. One cell: a fresh server pinned to its own CPUs,
/health, a short warm-up, the measured k6 run (with the server tree and k6 sampled), then a
stop that must leave nothing behind. A failing cell becomes an error row; the run goes on."""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from lab import children, interpreters, interrupt, loadgen, model, probe, results, server
from lab.contract import load
from lab.matrix import Cell
from lab.progress import Progress, clock
from lab.results import RunDir, provenance
from lab.sampler import Sampler, cpu_seconds
from lab.targets import find

OVERHEAD_ESTIMATE_S = 4.0  # start, health, warm-up, stop: what a cell costs beyond its load
TIMELINE_KINDS = ("sleep", "cpu")
TIMELINE_MAX = 24  # requests in one timeline batch
KNOBS = ("WORKERS", "THREADS", "EXECUTOR_THREADS", "POOL_PROCESSES", "GOMAXPROCS")
# A cell with more failed requests than this share is an error, never a verdict: failed
# requests distort both throughput (a 502 without an upstream returns in microseconds) and
# latency (a timeout holds a VU for the whole TIMEOUT). 0.1 % is the bar well-kept benchmark
# suites use to drop a run; a 2 s cell of 20 requests thus tolerates no failure at all.
FAILED_SHARE_MAX = 0.001


@dataclass
class Options:
    url: str | None = None  # benchmark a running server: no local lifecycle
    port: int | None = None  # fixed port for local servers (default: a free one per cell)
    canary_rate: int = loadgen.CANARY_RATE
    health_timeout: float = 30.0
    pin: bool = True
    # k6 ends at duration + GRACEFUL_STOP (3 s) + its summary; beyond this margin it hung.
    k6_margin_s: float = 60.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def cpu_split(pin: bool = True) -> tuple[list[int] | None, list[int] | None]:
    """Disjoint CPU sets for the server and the load side (k6, the upstream service).
    The server gets the larger half; with a single CPU nothing is pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return None, None
    half = math.ceil(len(cpus) / 2)
    return cpus[:half], cpus[half:]


def estimate_s(cells: list[Cell]) -> float:
    return sum(c.expected_s + OVERHEAD_ESTIMATE_S for c in cells)


def _one_line(text: str, limit: int = 600) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())[-limit:]


class Runner:
    def __init__(self, run: RunDir, options: Options) -> None:
        self.run = run
        self.options = options
        self.contract = load()
        self.server_cpus, self.k6_cpus = cpu_split(options.pin and not options.url)
        self.upstream: server.ServerProcess | None = None
        self.servers: dict[str, Any] = {}

    # --- the run ------------------------------------------------------------------------

    def execute(self, cells: list[Cell], done: set[str]) -> list[dict[str, Any]]:
        """Run every cell whose id is not in `done`; returns this session's rows."""
        todo = [c for c in cells if c.id not in done]
        print(
            f"run {self.run.run_id}: {len(todo)} cells to run"
            + (f" ({len(done)} already done)" if done else "")
            + f", about {clock(estimate_s(todo))}; server CPUs {self.server_cpus or 'all'}, "
            f"k6 CPUs {self.k6_cpus or 'all'}",
            file=sys.stderr,
        )
        progress = Progress(len(todo), estimate_s(todo))
        rows: list[dict[str, Any]] = []
        if self.k6_cpus:
            # The runner (its sampler, probes and calibration) measures: it sits with k6,
            # leaving the server's CPUs to the server alone.
            os.sched_setaffinity(0, self.k6_cpus)
        try:
            for cell in todo:
                progress.show(cell.id)
                row = self.cell(cell, index=len(done) + len(rows) + 1)
                self.run.append(row)
                rows.append(row)
                progress.advance(_brief(row))
                interrupt.check()  # a signal during the cell's clean-up ends the run here
        finally:
            with interrupt.shielded():
                if self.upstream:
                    self.upstream.stop()
                    self.upstream = None
        return rows

    def _upstream_url(self) -> str:
        if self.upstream is None or not self.upstream.alive():
            if self.upstream:
                self.upstream.stop()
            self.upstream = server.upstream_server(cpus=self.k6_cpus).start()
        return self.upstream.url

    # --- one cell -------------------------------------------------------------------------

    def cell(self, cell: Cell, index: int) -> dict[str, Any]:
        cell_started = time.monotonic()
        endpoint = self.contract[cell.endpoint]
        row: dict[str, Any] = {
            "run_id": self.run.run_id,
            "cell": cell.id,
            "target": cell.target,
            "profile": cell.profile,
            "endpoint": cell.endpoint,
            "ms": cell.param("ms"),
            "n": cell.param("n"),
            "vus": cell.vus,
            "rate": cell.rate,
            "duration_s": cell.duration_s,
            "repeat": cell.repeat,
            "status": "ok",
            "error": "",
            "server_cpus": _cpus(self.server_cpus) if not self.options.url else "",
            "k6_cpus": _cpus(self.k6_cpus),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        stem = self._stem(cell, index)
        proc: server.ServerProcess | None = None
        k6run: loadgen.K6Run | None = None
        sampler: Sampler | None = None
        env: interpreters.Interpreter | None = None
        try:
            if self.options.url:
                base = self.options.url.rstrip("/")
            else:
                env = interpreter(cell)
                row.update(interpreters.row_fields({}, env))
                upstream_url = self._upstream_url() if endpoint.kind == "upstream" else ""
                proc = server.target_server(
                    find(cell.target),
                    cell.profile,
                    port=self.options.port,
                    cpus=self.server_cpus,
                    upstream_url=upstream_url or "http://127.0.0.1:9",
                    log=self.run.logs / f"{stem}-server.log",
                    bin_dir=env.bin_dir if env and cell.python else None,
                )
                started = time.monotonic()
                proc.start(self.options.health_timeout)
                row["server_start_s"] = time.monotonic() - started
                base = proc.url
            status, info = server.get_json(f"{base}/info")
            info = info if status == 200 and isinstance(info, dict) else {}
            self.servers.setdefault(cell.series, info)
            row.update(interpreters.row_fields(info, env))
            row.update(
                workers=info.get("workers"),
                threads=info.get("threads"),
                capacity=info.get("capacity", {}).get(cell.endpoint),
            )
            warm_up(base, endpoint.path, cell)
            service_ms = (
                calibrate(base, endpoint.path, cell, proc.pid if proc else None)
                if endpoint.kind == "cpu"
                else endpoint.service_ms(dict(cell.params))
            )
            row["service_ms"] = service_ms
            # Before the load: afterwards, requests k6 gave up on can still fill the server's
            # queue (a sync worker works through its listen backlog), and the picture with them.
            if endpoint.kind in TIMELINE_KINDS and cell.repeat == 1:
                self.timeline(base, endpoint.path, cell, row, stem)
            summary = self.run.summaries / f"{stem}.json"
            upstream = self.upstream if endpoint.kind == "upstream" else None
            k6run = loadgen.start(
                cell,
                base,
                summary,
                self.run.logs / f"{stem}-k6.log",
                self.k6_cpus,
                self.options.canary_rate,
            )
            pids = {"k6": k6run.proc.pid, **({"server": proc.pid} if proc else {})}
            if upstream:
                pids["upstream"] = upstream.pid  # it shares the load side's CPUs
            sampler = Sampler(pids).start()
            budget = cell.duration_s + self.options.k6_margin_s
            code = k6run.wait(timeout=budget)
            usage = sampler.stop()
            row.update(_usage(usage, self.server_cpus, self.k6_cpus))
            row["restarts"] = len(sampler.ended("server")) if proc else None
            data = loadgen.read_summary(summary)
            if data is not None:
                row.update(loadgen.parse_summary(data))
            problems = []
            if proc and not proc.alive():
                problems.append(
                    f"the server {children.describe_exit(proc.proc.returncode)} during the cell"  # type: ignore[union-attr]
                )
            if upstream and not upstream.alive():
                problems.append(
                    f"the upstream service (pid {upstream.pid}) "
                    f"{children.describe_exit(upstream.proc.returncode)} during the cell"  # type: ignore[union-attr]
                )
            if code is None:
                problems.append(f"k6 did not finish within {budget:.0f} s (hung?) and was stopped")
            elif data is None:
                problems.append(
                    f"k6 {children.describe_exit(code)} and wrote no summary"
                    + _disk_note(self.run.path)
                )
            elif row["failed_requests"] and _failed_share(row) > FAILED_SHARE_MAX:
                problems.append(
                    f"{row['failed_requests']} of {row['requests'] + row['failed_requests']} "
                    f"requests failed ({_failed_share(row):.2%}, above {FAILED_SHARE_MAX:.1%})"
                )
            elif not row["requests"]:
                problems.append("no successful requests (server stopped answering?)")
            if row.get("restarts"):
                ended = ", ".join(map(str, sampler.ended("server")))
                problems.append(
                    f"{row['restarts']} serving process(es) of the server ended during the cell "
                    f"(pid {ended}), so it was not measured as configured"
                )
            if problems:
                failures = f": {row['failures']}" if row.get("failures") else ""
                # the server's last words, when it is the server that failed
                server_failed = proc and (not proc.alive() or not row.get("requests"))
                tail = proc.log_tail(5) if server_failed else ""
                raise CellError("; ".join(problems) + failures + (f" | {tail}" if tail else ""))
            row.update(self.model(cell, endpoint.kind, service_ms, info, row))
        except (CellError, server.ServerError, OSError) as exc:
            row.update(status="error", error=_one_line(_explain(exc, self.run.path)))
        finally:
            with interrupt.shielded():  # bounded: a few seconds at most, whatever died
                if sampler:
                    sampler.stop()
                if k6run:
                    k6run.kill()
                if proc:
                    report = proc.stop()
                    row["server_stop_s"] = report.seconds
                    if not report.clean and row["status"] == "ok":
                        row["error"] = f"stop needed SIGKILL for {report.leftover}"
                row["cell_s"] = time.monotonic() - cell_started
        return row

    def _stem(self, cell: Cell, index: int) -> str:
        """File names of a cell's logs and summary; a retried cell does not overwrite."""
        py = f"-py{cell.python}" if cell.python else ""
        stem = f"{index:04d}-{cell.target}-{cell.profile}{py}-{cell.endpoint}"
        stem += f"-v{cell.vus}-r{cell.repeat}"
        attempt, unique = 1, stem
        while (self.run.logs / f"{unique}-k6.log").exists() or (
            self.run.logs / f"{unique}-server.log"
        ).exists():
            attempt += 1
            unique = f"{stem}-a{attempt}"
        return unique

    def timeline(self, base: str, path: str, cell: Cell, row: dict[str, Any], stem: str) -> None:
        """Per-request start, end and worker pid of a batch of 2 x capacity requests released
        at once on the idle server (the picture tutorials draw from access logs)."""
        capacity = row.get("capacity")
        k = min(TIMELINE_MAX, 2 * capacity) if capacity else TIMELINE_MAX // 2
        try:
            _, replies = probe.batch(base, path + _query(cell), k, timeout=60)
        except (OSError, RuntimeError):
            return  # a picture we could not take is no reason to fail the measured cell
        self.run.timelines.mkdir(exist_ok=True)
        requests = [
            {
                "start_ms": r.start * 1000,
                "end_ms": r.end * 1000,
                "pid": r.body.get("pid") if isinstance(r.body, dict) else None,
            }
            for r in replies
        ]
        doc = {
            "cell": cell.id,
            "target": cell.target,
            "profile": cell.profile,
            "endpoint": cell.endpoint,
            "capacity": capacity,
            "requests": requests,
        }
        (self.run.timelines / f"{stem}.json").write_text(json.dumps(doc, indent=1))

    def model(
        self, cell: Cell, kind: str, service_ms: float | None, info: dict[str, Any], row: dict
    ) -> dict[str, Any]:
        p = model.predict(kind, cell.endpoint, service_ms, cell.vus, cell.rate, info)
        eff = model.efficiency(row.get("rps"), p.rps)
        return {
            "predicted_rps": p.rps,
            "predicted_latency_ms": p.latency_ms,
            "efficiency": eff,
            # A saturated server explains a waiting cell; a CPU cell is meant to be CPU-bound.
            "verdict": model.verdict(
                eff,
                bool(row.get("loadgen_bound")),
                kind in ("sleep", "upstream") and bool(row.get("server_cpu_bound")),
            ),
        }


class CellError(RuntimeError):
    """The cell could not be measured; the message says why."""


def _failed_share(row: dict[str, Any]) -> float:
    total = (row.get("requests") or 0) + (row.get("failed_requests") or 0)
    return (row.get("failed_requests") or 0) / total if total else 0.0


def _disk_note(path: Path) -> str:
    free = results.free_bytes(path)
    if free is not None and free < results.DISK_LOW_BYTES:
        return f" (the results disk is full: {free} bytes free at {path})"
    return ""


def _explain(exc: BaseException, path: Path) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the results disk is full ({exc.strerror}: {exc.filename or path})"
    return str(exc)


def interpreter(cell: Cell) -> interpreters.Interpreter | None:
    """The environment a local cell's server runs on (None for a Go cell)."""
    try:
        return interpreters.for_cell(cell)
    except interpreters.Unavailable as exc:  # removed since the run was planned
        raise CellError(str(exc)) from None


def _cpus(cpus: list[int] | None) -> str:
    return " ".join(map(str, cpus)) if cpus else ""


def _usage(
    usage: dict[str, Any], server_cpus: list[int] | None, k6_cpus: list[int] | None
) -> dict[str, Any]:
    """Sampled CPU and memory; a side is 'bound' when it used most of the CPUs it had."""
    k6 = usage.get("k6")
    srv = usage.get("server")
    up = usage.get("upstream")
    k6_pct = k6.cpu_pct if k6 else None
    srv_pct = srv.cpu_pct if srv else None
    up_pct = up.cpu_pct if up else None
    # The load side is k6 and, for /upstream cells, the upstream service on the same CPUs.
    load_pct = None if k6_pct is None else k6_pct + (up_pct or 0.0)
    every = os.cpu_count() or 1
    k6_budget = len(k6_cpus) if k6_cpus else every
    srv_budget = len(server_cpus) if server_cpus else every
    return {
        "server_cpu_pct": srv_pct,
        "server_busy_pct": srv.busy_pct if srv else None,
        "server_rss_mb": srv.rss_mb if srv else None,
        "k6_cpu_pct": k6_pct,
        "upstream_cpu_pct": up_pct,
        "loadgen_bound": load_pct is not None and load_pct >= model.LOADGEN_BOUND_PCT * k6_budget,
        "server_cpu_bound": srv_pct is not None and srv_pct >= model.SERVER_BOUND_PCT * srv_budget,
    }


def _brief(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        return f"ERROR {row['error'][:100]}"
    eff = row.get("efficiency")
    eff_text = f" eff {eff:.2f}" if eff else ""
    return f"{row['rps']:.1f} rps, p95 {row['lat_p95_ms']:.0f} ms{eff_text} ({row['verdict']})"


def _query(cell: Cell, **override: int) -> str:
    values = {**dict(cell.params), **override}
    return "?" + "&".join(f"{k}={v}" for k, v in values.items()) if values else ""


def warm_up(base: str, path: str, cell: Cell) -> None:
    """Wake up thread pools, pool processes and connections with small requests at once."""
    small = {k: v for k, v in {"ms": 1, "n": 1}.items() if cell.param(k) is not None}
    url = f"{base}{path}{_query(cell, **small)}"
    k = min(cell.vus, 16)
    with ThreadPoolExecutor(k) as pool:
        list(pool.map(lambda _: server.get_json(url, timeout=30), range(k)))


CALIBRATION_S = 0.5  # enough server CPU time that the kernel's 10 ms accounting ticks blur < 2 %
CALIBRATION_MAX = 500  # requests


def calibrate(base: str, path: str, cell: Cell, server_pid: int | None = None) -> float:
    """Service time of a CPU request on this server, one request at a time: the CPU time its
    whole process tree spends per request (the work, HTTP included, not the client's share),
    or, for a server we cannot see (--url), the median latency. Requests go on until the
    server has used CALIBRATION_S of CPU (at least 3, at most CALIBRATION_MAX)."""
    times: list[float] = []
    # One kept-alive connection, as k6 uses: a new connection per request would charge its
    # setup to every request (a sixth of the work of a 1 ms Go request).
    with probe.Connection(base, timeout=60) as conn:
        cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
        used = 0.0
        while len(times) < CALIBRATION_MAX and (len(times) < 3 or used < CALIBRATION_S):
            reply = conn.get(path + _query(cell))
            if reply.status != 200:
                raise CellError(f"calibration request answered {reply.status}")
            times.append(reply.seconds * 1000)
            used = (cpu_seconds(server_pid) - cpu_before) if server_pid else sum(times) / 1000
    if server_pid and used > 0:
        return used / len(times) * 1000
    return statistics.median(times)


def start_run(
    runner: Runner, cells: list[Cell], matrix: dict[str, Any], argv: list[str]
) -> dict[str, Any]:
    """Write run.json before the first cell, so an interrupted run can be resumed."""
    run, options = runner.run, runner.options
    meta = {
        "run_id": run.run_id,
        "status": "running",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": argv,
        "options": options.to_json(),
        "matrix": matrix,
        "runner": runner_identity(),
        "knobs": {k: os.environ[k] for k in KNOBS if k in os.environ},
        "cpus": {"server": runner.server_cpus, "k6": runner.k6_cpus},
        **provenance(loadgen.binary()),
        "servers": {},
        "interpreters": interpreters.used(cells, local=not options.url),
        "cells": [c.to_json() for c in cells],
    }
    run.write_meta(meta)
    return meta


def runner_identity() -> dict[str, Any]:
    """Who runs a run: enough to tell later whether that process is still alive."""
    return {
        "pid": os.getpid(),
        "started": psutil.Process().create_time(),
        "host": platform.node(),
    }


def finish_run(run: RunDir, meta: dict[str, Any], runner: Runner, status: str) -> None:
    meta["servers"] = {**meta.get("servers", {}), **runner.servers}
    meta["status"] = status
    meta["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run.write_meta(meta)


def summary_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'cell':<52} {'rps':>9} {'p95 ms':>9} {'eff':>5}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['cell']:<52} {'error':>9}  {r['error'][:60]}")
            continue
        eff = f"{r['efficiency']:.2f}" if r.get("efficiency") else "-"
        lines.append(
            f"{r['cell']:<52} {r['rps']:>9.1f} {r['lat_p95_ms']:>9.1f} {eff:>5}  {r['verdict']}"
        )
    return "\n".join(lines)


def resume_cells(run: RunDir) -> tuple[list[Cell], set[str]]:
    meta = run.meta()
    cells = [Cell.from_json(c) for c in meta["cells"]]
    done = {r["cell"] for r in run.rows() if r.get("status") == "ok"}
    return cells, done
