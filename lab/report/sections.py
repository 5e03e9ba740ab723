"""What each part of the report shows: functions that select and shape a run's data into plain
dataclasses (and draw its charts). The prose and markup are in templates/; a builder returns
None when its section has nothing to show and is left out.

A builder takes the run and a ChartWriter; its template is templates/sections/<anchor>.html.j2
and gets the returned value as `data`. The order of the page is SECTIONS in lab/report/__init__.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure

from lab import model, stability
from lab.record import CellResult
from lab.report import charts
from lab.report.figures import Chart, ChartWriter
from lab.report.format import load_label, load_slug
from lab.report.groups import Group, GroupedRun

Load = tuple[int, int]  # (rate, vus); rate 0 = closed model

# --- selection helpers ----------------------------------------------------------------------


def endpoint_labels(groups: list[Group]) -> dict[str, str]:
    """Endpoint names, with the params only where one endpoint ran with several."""
    params: dict[str, set[str]] = {}
    for g in groups:
        params.setdefault(g.first.endpoint, set()).add(g.first.params)
    return {
        g.key: g.first.endpoint
        + (f"?{g.first.params}" if len(params[g.first.endpoint]) > 1 else "")
        for g in groups
    }


def by_load(groups: list[Group]) -> dict[Load, list[Group]]:
    """Groups per load level, levels in ascending order, groups in the report's order."""
    levels: dict[Load, list[Group]] = {}
    for g in sorted(groups, key=lambda g: g.load):
        levels.setdefault(g.load, []).append(g)
    return {k: [g for g in groups if g.load == k] for k in levels}


def measured(run: GroupedRun) -> list[Group]:
    return [g for g in run.groups if g.ok]


# --- header ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    run_id: str
    status: str
    matrix: dict[str, Any]
    started_at: str
    finished_at: str
    measured: int
    planned: int
    errors: int
    verdicts: list[tuple[str, int]]  # (verdict, cells), in order of first appearance
    command: str
    problems: list[str]
    loadgen_bound: list[str]  # cell keys
    stability: Stability | None  # None: a run from before the host's stability was measured


@dataclass(frozen=True)
class Stability:
    """How steady the host's CPU speed was over the run (run.json's `stability`, written by
    the runner from lab.stability): the figures the report shows at its top."""

    line: str  # lab.stability.describe(): the same line as summary.md and the progress
    cv_1s: float  # the speed's CV over 1-s windows (the check's, with the run's drift)
    check: dict[str, float]  # the check before the run: window (s) -> CV
    drift: float  # the probes' spread beyond the check's
    probes: int  # probes between cells
    low: float | None  # the slowest and fastest probe, relative to the check's speed
    high: float | None
    bimodal: bool
    steady: bool  # then every tolerance is model.TOLERANCE
    warning: str  # '' when steady enough for ±5 %


def host_stability(record: dict[str, Any] | None) -> Stability | None:
    if not isinstance(record, dict):
        return None
    probes = record.get("probes") or {}
    low, high = probes.get("range") or (None, None)
    check = (record.get("check") or {}).get("cv") or {}
    return Stability(
        line=stability.describe(record),
        cv_1s=float(record.get("cv_1s") or 0.0),
        check={str(k): float(v) for k, v in check.items()},
        drift=float(record.get("drift") or 0.0),
        probes=int(probes.get("count") or 0),
        low=low,
        high=high,
        bimodal=bool(record.get("bimodal")),
        steady=bool(record.get("steady")),
        warning=str(record.get("warning") or ""),
    )


def header(run: GroupedRun) -> Header:
    meta = run.meta
    verdicts: dict[str, int] = {}
    for g in run.groups:
        verdicts[g.verdict] = verdicts.get(g.verdict, 0) + 1
    return Header(
        run_id=run_id(run),
        status="unknown" if meta.status is None else meta.status,
        matrix=meta.matrix or {},
        started_at="-" if meta.started_at is None else meta.started_at,
        finished_at="(not finished)" if meta.finished_at is None else meta.finished_at,
        measured=len(run.rows),
        planned=len(meta.cells or []) or len(run.rows),
        errors=sum(r.status != "ok" for r in run.rows),
        verdicts=list(verdicts.items()),
        command=" ".join(map(str, meta.command or [])),
        problems=run.problems,
        loadgen_bound=[g.key for g in run.groups if g.loadgen_bound],
        stability=host_stability(meta.stability),
    )


def run_id(run: GroupedRun) -> str:
    return run.path.name if run.meta.run_id is None else run.meta.run_id


@dataclass(frozen=True)
class HostSpeed:
    figures: Stability
    chart: Chart | None  # the probes over the run; None: fewer than two


def host(run: GroupedRun, draw: ChartWriter) -> HostSpeed | None:
    """The host's stability in detail, with its probes over the run; left out for a run from
    before it was measured (the header says so)."""
    figures = host_stability(run.meta.stability)
    if figures is None:
        return None
    values = ((run.meta.stability or {}).get("probes") or {}).get("values") or []
    probes = [charts.Probe(float(t), int(cpu), float(v)) for t, cpu, v in values]
    chart = None
    if len({p.t for p in probes}) >= 2:
        chart = draw("stability", charts.stability(probes, "the host's CPU speed between cells"))
    return HostSpeed(figures, chart)


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultRow:
    target: str
    profile: str
    endpoint: str  # with the params when one endpoint ran with several
    params: str
    load: Load
    repeats: int  # measured repeats
    errors: int  # failed repeats
    rps: float | None
    p95: float | None
    predicted_rps: float | None
    efficiency: float | None
    interval: tuple[float, float] | None  # the 95 % confidence interval of rps (repeats)
    tolerance: float | None  # the cell's (None: no measured repeat)
    allowed: float  # the tolerance widened by the repeats' interval (model.allowed)
    tolerance_why: str
    verdict: str
    noisy: bool
    loadgen_bound: bool
    bound: list[Part]  # the limiting resource with the measured number behind it, in one line


@dataclass(frozen=True)
class Note:
    """An explanation many rows share: said once under the results table, each row that needs
    it links to it."""

    anchor: str  # note-<anchor> on the page
    title: str
    text: str


NOTES = {
    "flood": Note(
        "flood",
        "Flood",
        f"A closed cell with {model.FLOOD} or more VUs per slot: the rate is still the slots' "
        "C / (S + CPU), but each request waits N / X on average (Little's law), and the order "
        "of the answers is the server's (CONTRACT.md). A server that answers in bursts "
        "(FastAPI's def endpoints, hypercorn's blocked loop: CONTRACT.md) counts one burst "
        "more or less in a cell of a few rounds.",
    ),
    "jit": Note(
        "jit",
        "JIT warm-up",
        "A server that compiles while it runs (the JVM, Node) is warmed up before its "
        "calibration, until its CPU per request is steady or the warm-up's cap is reached "
        "('not steady'); none when even a cold JIT's CPU would hardly move the prediction "
        "(a cell bound by a wait). The row's warm_up_requests has how many requests it took. "
        "The CPU its compiler threads use during the calibration is left out of the CPU per "
        "request d (a compilation is no request's cost; the row's jit_calibration_pct).",
    ),
}


@dataclass(frozen=True)
class Part:
    """A piece of a row's bound: its text, and the note that explains it ('' for none)."""

    text: str
    note: str = ""


def bound_parts(g: Group) -> list[Part]:
    """The limiting resource with the measured number behind it (and why a cell is not
    judged, when it is censored); a flood and a JIT's warm-up in a few words, each pointing
    to its note."""
    if g.censored:
        return [Part(f"censored: {g.censored}")]
    row = next((r for r in g.ok if r.bound == g.bound), None)
    parts = [Part(model.limit_text(g.bound, row) if row and g.bound else "-")]
    if row and row.capacity and row.vus and row.vus >= model.FLOOD * row.capacity:
        wait_ms = row.predicted_latency_ms or 0
        wait = f"{wait_ms / 1000:.1f} s" if wait_ms >= 1000 else f"{wait_ms:.3g} ms"
        parts.append(Part(f"flood: {row.vus / row.capacity:.0f}× its slots, waits {wait}", "flood"))
    first = g.ok[0] if g.ok else None
    warm = warm_up_text(first) if first else ""
    return parts + ([Part(warm, "jit")] if warm else [])


def bound_text(g: Group) -> str:
    return " · ".join(p.text for p in bound_parts(g))


def warm_up_text(row: CellResult) -> str:
    """How long a server that compiles while it runs was warmed up before its calibration."""
    if row.warm_up_s is None:
        return ""
    if not row.warm_up_requests:
        text = "no JIT warm-up"
    else:
        steady = "steady" if row.warm_up_steady else "not steady"
        text = f"JIT warm-up {row.warm_up_s:.1f} s, {steady}"
    compiling = row.jit_calibration_pct
    if compiling is not None and compiling > 100 * model.COMPILING:
        text += f"; its compilers' {compiling:.0f} % of the calibration's CPU left out of d"
    return text


@dataclass(frozen=True)
class Results:
    rows: list[ResultRow]
    notes: list[Note]  # those the rows point to, in the order of first use


def results(run: GroupedRun, draw: ChartWriter) -> Results:
    """One row per cell (repeats folded to their median). Always shown, even when empty."""
    labels = endpoint_labels(run.groups)
    rows = [
        ResultRow(
            target=g.first.target,
            profile=g.first.profile,
            endpoint=labels[g.key],
            params=g.first.params,
            load=g.load,
            repeats=len(g.ok),
            errors=len(g.rows) - len(g.ok),
            rps=g.rps,
            p95=g.stat("lat_p95_ms"),
            predicted_rps=g.stat("predicted_rps"),
            efficiency=g.efficiency,
            interval=g.rps_interval,
            tolerance=g.tolerance if g.ok else None,
            allowed=g.allowed,
            tolerance_why=g.tolerance_why,
            verdict=g.verdict,
            noisy=g.noisy,
            loadgen_bound=g.loadgen_bound,
            bound=bound_parts(g),
        )
        for g in run.groups
    ]
    used = dict.fromkeys(p.note for r in rows for p in r.bound if p.note)
    return Results(rows, [NOTES[n] for n in used])


@dataclass(frozen=True)
class Fit:
    chart: Chart
    inside: int  # cells within the tolerance
    cells: int


def fit(run: GroupedRun, draw: ChartWriter) -> Fit | None:
    """Predicted vs measured throughput of every modelled cell, log-log, each with its
    tolerance band and, with repeats, its confidence interval."""
    judged = [
        (g, pred)
        for g in run.groups
        if g.ok and not g.censored and g.rps and (pred := g.stat("predicted_rps"))
    ]
    if not judged:
        return None
    points = [
        charts.Point(
            f"{g.series} {g.first.endpoint}",
            pred,
            g.rps or 0.0,
            g.bound,
            g.tolerance,
            g.rps_interval,
            g.verdict == "as predicted",
        )
        for g, pred in judged
    ]
    inside = sum(p.judged for p in points)
    figure = charts.predicted_vs_measured(points, "measured vs predicted throughput")
    return Fit(draw("predicted-vs-measured", figure), inside, len(points))


# --- charts per load level ------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyRow:
    series: str
    endpoint: str
    p50: float | None
    p95: float | None
    p99: float | None
    predicted: float | None  # the model's mean latency


@dataclass(frozen=True)
class CanaryRow:
    series: str
    endpoint: str  # the endpoint under load
    p50: float | None
    p99: float | None


@dataclass(frozen=True)
class Level:
    """One load level: its chart and, for some sections, the chart's numbers as a table."""

    load: Load
    chart: Chart
    rows: list[Any] = field(default_factory=list)


# A load level's chart and its rows (for the table), from the level's label, its groups and
# their endpoint labels.
LevelBuilder = Callable[[str, list[Group], dict[str, str]], tuple[Figure, list[Any]]]


def per_load(groups: list[Group], draw: ChartWriter, name: str, build: LevelBuilder) -> list[Level]:
    """A Level per load level of `groups`, in ascending order; its chart is NAME-<load>."""
    labels = endpoint_labels(groups)
    levels = []
    for load, at_load in by_load(groups).items():
        fig, rows = build(load_label(load), at_load, labels)
        levels.append(Level(load, draw(f"{name}-{load_slug(load)}", fig), rows))
    return levels


def throughput(run: GroupedRun, draw: ChartWriter) -> list[Level] | None:
    def level(at: str, groups: list[Group], labels: dict[str, str]) -> tuple[Figure, list[Any]]:
        bars = [
            charts.Bar(g.series, labels[g.key], g.rps, g.stat("predicted_rps"), g.loadgen_bound)
            for g in groups
        ]
        return charts.throughput(bars, f"throughput at {at}"), []

    return per_load(measured(run), draw, "throughput", level) or None


def latency(run: GroupedRun, draw: ChartWriter) -> list[Level] | None:
    def level(at: str, groups: list[Group], labels: dict[str, str]) -> tuple[Figure, list[Any]]:
        rows = [
            LatencyRow(
                g.series,
                labels[g.key],
                g.stat("lat_p50_ms"),
                g.stat("lat_p95_ms"),
                g.stat("lat_p99_ms"),
                g.stat("predicted_latency_ms"),
            )
            for g in groups
        ]
        spans = [
            charts.Span(f"{r.series} · {r.endpoint}", r.p50, r.p95, r.p99, r.predicted)
            for r in rows
        ]
        return charts.latency(spans, f"latency percentiles at {at}"), rows

    return per_load(measured(run), draw, "latency", level) or None


def efficiency(run: GroupedRun, draw: ChartWriter) -> list[Level] | None:
    def level(at: str, groups: list[Group], labels: dict[str, str]) -> tuple[Figure, list[Any]]:
        series = list(dict.fromkeys(g.series for g in groups))
        columns = list(dict.fromkeys(labels[g.key] for g in groups))
        cells = {
            (g.series, labels[g.key]): charts.Square(g.efficiency, g.loadgen_bound, g.allowed)
            for g in groups
        }
        title = f"efficiency at {at}"
        return charts.efficiency_heatmap(series, columns, cells, title), []

    return per_load(measured(run), draw, "efficiency", level) or None


@dataclass(frozen=True)
class Sweep:
    name: str  # /endpoint?params
    chart: Chart


def sweeps(run: GroupedRun, draw: ChartWriter) -> list[Sweep] | None:
    """Closed-model cells measured at two or more VU levels, one chart per endpoint."""
    by_series: dict[tuple[str, str, str], list[Group]] = {}
    for g in measured(run):
        if not g.first.rate:
            by_series.setdefault((g.first.endpoint, g.first.params, g.series), []).append(g)
    endpoints: dict[tuple[str, str], list[charts.Line]] = {}
    for (endpoint, params, series), groups in by_series.items():
        if len(groups) < 2:
            continue
        groups.sort(key=lambda g: g.first.vus or 0)
        endpoints.setdefault((endpoint, params), []).append(
            charts.Line(
                series,
                [float(g.first.vus or 0) for g in groups],
                [g.rps for g in groups],
                [g.stat("lat_p95_ms") for g in groups],
                [g.stat("predicted_rps") for g in groups],
            )
        )
    found = []
    for (endpoint, params), lines in endpoints.items():
        name = f"/{endpoint}" + (f"?{params}" if params else "")
        slug = "sweep-" + "".join(c if c.isalnum() else "-" for c in f"{endpoint}-{params}")
        fig = charts.sweep(lines, f"{name}: concurrency sweep")
        found.append(Sweep(name, draw(slug.rstrip("-"), fig)))
    return found or None


@dataclass(frozen=True)
class Canary:
    rate: Any  # the canary's requests per second (run.json options), None if not recorded
    levels: list[Level]  # empty: no canary data in this run


def canary(run: GroupedRun, draw: ChartWriter) -> Canary:
    def level(at: str, groups: list[Group], labels: dict[str, str]) -> tuple[Figure, list[Any]]:
        rows = [
            CanaryRow(g.series, labels[g.key], g.stat("canary_p50_ms"), g.stat("canary_p99_ms"))
            for g in groups
        ]
        bars = [charts.Bar(r.series, r.endpoint, r.p99, r.p50) for r in rows]
        return charts.canary(bars, f"/hello canary latency at {at}"), rows

    with_canary = [g for g in measured(run) if g.stat("canary_p99_ms") is not None]
    levels = per_load(with_canary, draw, "canary", level)
    return Canary((run.meta.options or {}).get("canary_rate"), levels)


# --- tables ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatRow:
    key: str
    total: int  # repeats run
    values: list[float]  # rps of the measured repeats, in repeat order
    median: float | None
    low: float | None
    high: float | None
    interval: tuple[float, float] | None  # 95 % confidence interval of the mean rps
    cv: float | None
    noisy: bool


def repeats(run: GroupedRun, draw: ChartWriter) -> list[RepeatRow] | None:
    rows = [
        RepeatRow(
            key=g.key,
            total=len(g.rows),
            values=g.rps_values,
            median=g.rps,
            low=min(g.rps_values, default=None),
            high=max(g.rps_values, default=None),
            interval=g.rps_interval,
            cv=g.cv,
            noisy=g.noisy,
        )
        for g in run.groups
        if len(g.rows) >= 2
    ]
    return rows or None


@dataclass(frozen=True)
class ErrorRow:
    cell: str
    status: str
    error: str


def errors(run: GroupedRun, draw: ChartWriter) -> list[ErrorRow]:
    """Always shown: an empty list says every cell was measured."""
    return [ErrorRow(r.cell, r.status, r.error) for r in run.rows if r.status != "ok"]


@dataclass(frozen=True)
class Timeline:
    name: str  # the file in timelines/
    chart: Chart | None  # None: the file could not be read
    cell: str = ""
    requests: int = 0
    capacity: int | None = None  # None: unbounded
    span_ms: float = 0.0  # first start to last end
    processes: int = 0


def timelines(run: GroupedRun, draw: ChartWriter) -> list[Timeline] | None:
    found = []
    for i, (name, data) in enumerate(run.timelines, 1):
        try:
            requests = [
                charts.Request(float(q["start_ms"]), float(q["end_ms"]), _pid(q.get("pid")))
                for q in (data or {})["requests"]
            ]
        except (KeyError, TypeError, ValueError):
            found.append(Timeline(name, None))
            continue
        assert data is not None
        cell = str(data.get("cell", name))
        starts, ends = [r.start_ms for r in requests], [r.end_ms for r in requests]
        fig = charts.timeline(requests, f"timeline: {cell}")
        found.append(
            Timeline(
                name,
                draw(f"timeline-{i}", fig),
                cell=cell,
                requests=len(requests),
                capacity=data.get("capacity"),
                span_ms=max(ends) - min(starts) if requests else 0.0,
                processes=len({r.pid for r in requests}),
            )
        )
    return found or None


def _pid(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Server:
    name: str  # target/profile
    info: dict[str, Any]  # its /info


@dataclass(frozen=True)
class Provenance:
    general: dict[str, Any]
    machine: dict[str, Any]
    versions: dict[str, Any]
    servers: list[Server]
    run_json: str  # run.json without the cell list, pretty-printed


def provenance(run: GroupedRun, draw: ChartWriter) -> Provenance:
    meta = run.meta
    commit = ("-" if meta.git_commit is None else meta.git_commit) + (
        " (dirty)" if meta.git_dirty else ""
    )
    servers = meta.servers or {}
    return Provenance(
        general={
            "git commit": commit,
            "cpu pinning": meta.cpus or {},
            "knobs (environment)": meta.knobs or "none (target defaults)",
            "options": meta.options or {},
        },
        machine=meta.machine or {},
        versions=meta.versions or {},
        servers=[
            Server(name, info if isinstance(info, dict) else {}) for name, info in servers.items()
        ],
        run_json=json.dumps({k: v for k, v in meta.to_json().items() if k != "cells"}, indent=2),
    )
