"""Runs a list of cells into a run folder. One cell: a fresh server pinned to its own CPUs,
/health, a short warm-up, the measured k6 run (with the server tree and k6 sampled), then a
stop that must leave nothing behind. A failing cell becomes an error row; the run goes on."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import platform
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from lab import interpreters, model
from lab.contract import load
from lab.matrix import Cell
from lab.proc import children, interrupt, probe, server
from lab.proc.sampler import Sampler
from lab.record import CellResult
from lab.run import calibrate, folder, loadgen
from lab.run.folder import RunDir, provenance
from lab.run.progress import Progress, clock
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
    max_cell_s: float = model.MAX_CELL_S  # the longest a cell may be lengthened (a matrix's)

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
        # k6's cost per request, measured once per VU count (it grows with the VUs)
        self.loadgen: dict[int, calibrate.LoadgenCost] = {}

    # --- the run ------------------------------------------------------------------------

    def execute(self, cells: list[Cell], done: set[str]) -> list[CellResult]:
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
        rows: list[CellResult] = []
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

    def loadgen_cost(self, vus: int) -> calibrate.LoadgenCost:
        """k6's cost per request at this many VUs, measured the first time it is needed."""
        if vus not in self.loadgen:
            cost = calibrate.loadgen_cost(
                self.k6_cpus, self.server_cpus, self.run.path / "calibration", vus
            )
            self.loadgen[vus] = cost
            print(
                f"k6 costs {cost.us_per_request:.0f} µs per request at {vus} VUs ({cost.source})",
                file=sys.stderr,
            )
        return self.loadgen[vus]

    def _upstream_url(self) -> str:
        if self.upstream is None or not self.upstream.alive():
            if self.upstream:
                self.upstream.stop()
            self.upstream = server.upstream_server(cpus=self.k6_cpus).start()
        return self.upstream.url

    # --- one cell -------------------------------------------------------------------------

    def cell(self, cell: Cell, index: int) -> CellResult:
        cell_started = time.monotonic()
        endpoint = self.contract[cell.endpoint]
        row = CellResult(
            run_id=self.run.run_id,
            cell=cell.id,
            target=cell.target,
            profile=cell.profile,
            endpoint=cell.endpoint,
            ms=cell.param("ms"),
            n=cell.param("n"),
            vus=cell.vus,
            rate=cell.rate,
            duration_s=cell.duration_s,
            repeat=cell.repeat,
            status="ok",
            server_cpus=_cpus(self.server_cpus) if not self.options.url else "",
            k6_cpus=_cpus(self.k6_cpus),
            started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
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
                row.update(**interpreters.row_fields({}, env))
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
                row.server_start_s = time.monotonic() - started
                base = proc.url
            status, info = server.get_json(f"{base}/info")
            info = info if status == 200 and isinstance(info, dict) else {}
            self.servers.setdefault(cell.series, info)
            row.update(**interpreters.row_fields(info, env))
            row.update(
                workers=info.get("workers"),
                threads=info.get("threads"),
                capacity=info.get("capacity", {}).get(cell.endpoint),
            )
            warm_up(base, endpoint, cell)
            # The model's inputs, on the idle server, and its prediction: before the load.
            demand = self.calibrate(cell, endpoint, base, proc)
            prediction = self.predict(cell, endpoint, demand, info, row)
            seconds, row.censored = model.planned_duration_s(
                cell.duration_s, prediction.rps, self.options.max_cell_s
            )
            # Before the load: afterwards, requests k6 gave up on can still fill the server's
            # queue (a sync worker works through its listen backlog), and the picture with them.
            if endpoint.kind in TIMELINE_KINDS and cell.repeat == 1:
                self.timeline(base, endpoint.path, cell, row, stem)
            summary = self.run.summaries / f"{stem}.json"
            upstream = self.upstream if endpoint.kind == "upstream" else None
            k6run = loadgen.start(
                calibrate.with_duration(cell, seconds),
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
            budget = seconds + self.options.k6_margin_s
            code = k6run.wait(timeout=budget)
            usage = sampler.stop()
            row.update(**_usage(usage, self.server_cpus, self.k6_cpus))
            row.restarts = len(sampler.ended("server")) if proc else None
            data = loadgen.read_summary(summary)
            if data is not None:
                row.update(**loadgen.parse_summary(data))
                row.measured_s = _measured_s(data)
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
            elif row.failed_requests and _failed_share(row) > FAILED_SHARE_MAX:
                problems.append(
                    f"{row.failed_requests} of {(row.requests or 0) + row.failed_requests} "
                    f"requests failed ({_failed_share(row):.2%}, above {FAILED_SHARE_MAX:.1%})"
                )
            elif not row.requests:
                problems.append("no successful requests (server stopped answering?)")
            if row.restarts:
                ended = ", ".join(map(str, sampler.ended("server")))
                problems.append(
                    f"{row.restarts} serving process(es) of the server ended during the cell "
                    f"(pid {ended}), so it was not measured as configured"
                )
            if problems:
                failures = f": {row.failures}" if row.failures else ""
                # the server's last words, when it is the server that failed
                server_failed = proc and (not proc.alive() or not row.requests)
                tail = proc.log_tail(5) if server_failed else ""
                raise CellError("; ".join(problems) + failures + (f" | {tail}" if tail else ""))
            judge(row)
        except (CellError, server.ServerError, calibrate.CalibrationError, OSError) as exc:
            row.update(status="error", error=_one_line(_explain(exc, self.run.path)))
            judge(row)
        finally:
            with interrupt.shielded():  # bounded: a few seconds at most, whatever died
                if sampler:
                    sampler.stop()
                if k6run:
                    k6run.kill()
                if proc:
                    report = proc.stop()
                    row.server_stop_s = report.seconds
                    if not report.clean and row.status == "ok":
                        row.error = f"stop needed SIGKILL for {report.leftover}"
                row.cell_s = time.monotonic() - cell_started
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

    def timeline(self, base: str, path: str, cell: Cell, row: CellResult, stem: str) -> None:
        """Per-request start, end and worker pid of a batch of 2 x capacity requests released
        at once on the idle server (the picture tutorials draw from access logs)."""
        capacity = row.capacity
        k = min(TIMELINE_MAX, 2 * capacity) if capacity else TIMELINE_MAX // 2
        try:
            _, replies = probe.batch(base, path + cell.query(), k, timeout=60)
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

    def calibrate(
        self,
        cell: Cell,
        endpoint: Any,
        base: str,
        proc: server.ServerProcess | None,
    ) -> model.Demand:
        """The model's inputs, measured on the idle server (and k6's cost per request at this
        many VUs, measured once)."""
        k6 = self.loadgen_cost(cell.vus)
        upstream_pid = self.upstream.pid if endpoint.kind == "upstream" and self.upstream else None
        cost = calibrate.server_cost(base, endpoint, cell, proc.pid if proc else None, upstream_pid)
        return model.Demand(
            service_ms=endpoint.service_ms(dict(cell.params)) or 0.0,
            server_cpu_ms=cost.cpu_ms,
            overhead_ms=cost.overhead_ms,
            upstream_cpu_ms=cost.upstream_cpu_ms,
            loadgen_us=k6.us_per_request,
            overshoot_ms=cost.overshoot_ms,
        )

    def predict(
        self, cell: Cell, endpoint: Any, demand: model.Demand, info: dict[str, Any], row: CellResult
    ) -> model.Prediction:
        """The model's prediction of the cell; fills the model's columns."""
        load_cpus = len(self.k6_cpus) if self.k6_cpus else (os.cpu_count() or 1)
        p = model.predict(
            endpoint.kind, cell.endpoint, demand, cell.vus, cell.rate, info, load_cpus
        )
        row.update(
            service_ms=demand.service_ms,
            server_cpu_ms=demand.server_cpu_ms,
            overhead_ms=demand.overhead_ms,
            overshoot_ms=demand.overshoot_ms,
            upstream_cpu_ms=demand.upstream_cpu_ms,
            loadgen_us=demand.loadgen_us,
            loadgen_rps_max=p.loadgen_rps_max,
            predicted_rps=p.rps,
            predicted_latency_ms=p.latency_ms,
            bound=p.bound,
        )
        return p


def judge(row: CellResult) -> None:
    """Efficiency and the verdict, once the cell is measured (lab.model.verdict decides)."""
    if row.status == "ok" and not row.censored:
        row.censored = model.too_few(row.requests)
    row.efficiency = (
        model.efficiency(row.rps, row.predicted_rps)
        if row.status == "ok" and not row.censored
        else None
    )
    row.verdict = model.verdict(row.status, row.efficiency, row.censored)


def _measured_s(data: dict[str, Any]) -> float | None:
    """How long k6 really ran the cell (the duration, plus what the graceful stop used)."""
    ms = (data.get("state") or {}).get("testRunDurationMs")
    return ms / 1000.0 if isinstance(ms, int | float) else None


class CellError(RuntimeError):
    """The cell could not be measured; the message says why."""


def _failed_share(row: CellResult) -> float:
    total = (row.requests or 0) + (row.failed_requests or 0)
    return (row.failed_requests or 0) / total if total else 0.0


def _disk_note(path: Path) -> str:
    free = folder.free_bytes(path)
    if free is not None and free < folder.DISK_LOW_BYTES:
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


def _brief(row: CellResult) -> str:
    if row.status != "ok":
        return f"ERROR {row.error[:100]}"
    eff_text = f" eff {row.efficiency:.2f}" if row.efficiency else ""
    return (
        f"{row.rps or 0:.1f} rps, p95 {row.lat_p95_ms or 0:.0f} ms{eff_text} "
        f"({row.verdict}; {row.bound or 'no bound'})"
    )


WARM_UP_MAX = 256  # requests at once at most, for the upstream client's pool


def warm_up(base: str, endpoint: Any, cell: Cell) -> None:
    """Wake up thread pools, pool processes and connections with small requests at once.
    An /upstream cell's server needs, under the load, as many connections to the upstream as
    calls in flight: N VUs x n calls at once. Opened by the load's first wave, they made that
    wave's requests 190-370 ms instead of about 110 (gin, aiohttp: 50 VUs, n=10, ms=100), a
    start-up cost the steady state does not have; so the same number of calls are made at once
    here (waits of min(ms, 10) ms, released together), the same rule on every target."""
    small = {"ms": 1, "n": 1}  # of the parameters the cell has (Cell.query ignores others)
    k = min(cell.vus, 16)
    if endpoint.kind == "upstream":
        wait = min(cell.param("ms") or 1, calibrate.WAIT_MS)
        small["ms"] = wait
        if endpoint.concurrent:  # n calls at once: keep n; one after another need one connection
            small.pop("n")
        k = min(cell.vus, WARM_UP_MAX)
    url = f"{base}{endpoint.path}{cell.query(**small)}"
    start = threading.Barrier(k)

    def one(_: int) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            start.wait(timeout=10)
        return server.get_json(url, timeout=30)

    with ThreadPoolExecutor(k) as pool:
        list(pool.map(one, range(k)))


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
    if runner.loadgen:
        meta["loadgen"] = [cost.to_json() for _, cost in sorted(runner.loadgen.items())]
    meta["status"] = status
    meta["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run.write_meta(meta)


def summary_table(rows: list[CellResult]) -> str:
    head = f"{'cell':<52} {'rps':>9} {'p95 ms':>9} {'eff':>5}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.status != "ok":
            lines.append(f"{r.cell:<52} {'error':>9}  {r.error[:60]}")
            continue
        eff = f"{r.efficiency:.2f}" if r.efficiency else "-"
        rps = f"{r.rps:>9.1f}" if r.rps is not None else f"{'-':>9}"
        p95 = f"{r.lat_p95_ms:>9.1f}" if r.lat_p95_ms is not None else f"{'-':>9}"
        lines.append(f"{r.cell:<52} {rps} {p95} {eff:>5}  {r.verdict} ({r.bound or '-'})")
    return "\n".join(lines)


def resume_cells(run: RunDir) -> tuple[list[Cell], set[str]]:
    meta = run.meta()
    cells = [Cell.from_json(c) for c in meta["cells"]]
    done = {r["cell"] for r in run.rows() if r.get("status") == "ok"}
    return cells, done
