"""The report of one run: reads results/<run>/ (results.csv, run.json, timelines/), folds the
repetitions of each cell together and writes report.html (one self-contained file, charts as
inline SVG), every chart again as a PNG in charts/, and summary.md (the headline table).

    python -m lab.report [RUN]        RUN: a run id, 'latest' (default) or a run folder
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from lab import charts, model
from lab.runs import NOISY_CV, Group, Run, read_run

VERDICT_CLASS = {
    "as predicted": "ok",
    "below model": "below",
    "server-cpu-bound": "cpubound",
    "above model": "above",
    "loadgen-bound": "loadgen",
    "no model": "nomodel",
    "censored": "loadgen",
    "error": "error",
}


# --- formatting -----------------------------------------------------------------------------

e = html.escape


def num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def load_label(load: tuple[int, int]) -> str:
    rate, vus = load
    users = f"{vus} VU" + ("" if vus == 1 else "s")
    return f"{rate} req/s (open model, up to {users})" if rate else users


def load_slug(load: tuple[int, int]) -> str:
    rate, vus = load
    return f"rate{rate}-vus{vus}" if rate else f"vus{vus}"


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


def table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """An HTML table from already-escaped cell HTML."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def verdict_badge(verdict: str) -> str:
    return f'<span class="v v-{VERDICT_CLASS.get(verdict, "nomodel")}">{e(verdict or "-")}</span>'


# --- charts ---------------------------------------------------------------------------------


class ChartWriter:
    """Renders each figure once as inline SVG and once as charts/<slug>.png."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()
        self.count = 0

    def __call__(self, slug: str, fig: Any, caption: str) -> str:
        try:
            svg = charts.to_svg(fig)
            charts.save_png(fig, self.folder / f"{slug}.png")
        finally:
            charts.close(fig)
        self.count += 1
        return (
            f'<figure class="chart" id="chart-{e(slug)}">{svg}'
            f'<figcaption>{caption} <span class="png">(charts/{e(slug)}.png)</span>'
            "</figcaption></figure>"
        )


# --- sections -------------------------------------------------------------------------------


def section(anchor: str, title: str, intro: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{e(title)}</h2><p class="intro">{intro}</p>{body}</section>'


def by_load(groups: list[Group]) -> dict[tuple[int, int], list[Group]]:
    levels: dict[tuple[int, int], list[Group]] = {}
    for g in sorted(groups, key=lambda g: g.load):
        levels.setdefault(g.load, []).append(g)
    return {k: [g for g in groups if g.load == k] for k in levels}  # keep the report order


def _matrix_load(matrix: dict[str, Any]) -> str:
    rates = [r for r in matrix.get("rates") or [] if r]
    params = ", ".join(
        f"{k}={v}" if not isinstance(v, dict) else f"{k}: {v}"
        for k, v in (matrix.get("params") or {}).items()
    )
    parts = [
        f"VUs {', '.join(map(str, matrix.get('vus') or [])) or '-'}",
        f"open model at {', '.join(map(str, rates))} req/s" if rates else "closed model",
        f"{matrix.get('duration', '-')} per cell",
        f"{matrix.get('repeat', 1)} repeat(s)",
        f"params {params or '-'}",
    ]
    return "; ".join(parts)


def header(run: Run) -> str:
    meta = run.meta
    matrix = meta.get("matrix") or {}
    planned = len(meta.get("cells", [])) or len(run.rows)
    errors = sum(r.status != "ok" for r in run.rows)
    status = meta.get("status", "unknown")
    status_note = ""
    if status != "complete":
        status_note = (
            f' <span class="warn">the run is {e(status)}: {len(run.rows)} of {planned} '
            "cells were measured (interrupted, crashed or still running)</span>"
        )
    verdicts: dict[str, int] = {}
    for g in run.groups:
        verdicts[g.verdict] = verdicts.get(g.verdict, 0) + 1
    glance = ", ".join(f"{n} {verdict_badge(v)}" for v, n in verdicts.items()) or "nothing yet"
    facts = [
        ("status", f"<b>{e(str(status))}</b>{status_note}"),
        ("matrix", f"{e(str(matrix.get('name', '-')))} — {e(str(matrix.get('description', '')))}"),
        (
            "load",
            e(_matrix_load(matrix)),
        ),
        (
            "date",
            e(f"{meta.get('started_at', '-')} → {meta.get('finished_at', '(not finished)')}"),
        ),
        ("cells", f"{len(run.rows)} measured of {planned} planned, {errors} errors"),
        ("cells by verdict", glance),
        ("command", f"<code>lab {e(' '.join(map(str, meta.get('command', []))))}</code>"),
    ]
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    problems = "".join(f'<p class="warn">{e(p)}</p>' for p in run.problems)
    tol = f"{model.TOLERANCE:.0%}"
    lg = f"{model.LOADGEN_BOUND_PCT:.0f} %"
    sb = f"{model.SERVER_BOUND_PCT:.0f} %"
    how = f"""
<h2>How to read the model</h2>
<p>Every cell is one fresh server under one load from k6: <i>N</i> virtual users (VUs), each
sending its next request as soon as the last one answered (a closed model), or a fixed
arrival rate (open model). Before the load, on the idle server, the lab measures what one
request of the cell costs: the server's CPU time <i>d</i> (its whole process tree, one request
at a time on up to 8 kept-alive connections) and the rest of the round trip <i>Z</i>; once per run
it measures k6's own CPU per request. With the capacity <i>C</i> the server states in its
<code>/info</code> and the waiting time <i>S</i> of the endpoint (from the contract), the
throughput is limited by whichever resource saturates first (o: how late the waits end):</p>
<p class="formula">slots C / (S + d + o) &nbsp;·&nbsp; server CPUs m / d &nbsp;·&nbsp;
k6's CPUs / (k6 + upstream CPU per request) &nbsp;·&nbsp; VUs N / (S + d + Z + k6)</p>
<p>The CPUs are modelled with mean-value analysis (they queue before they saturate); the
prediction uses nothing measured during the cell's own load. The column <b>bound</b> names
the limiting resource and the number behind it; latency is N / throughput (Little's law).
<b>Efficiency</b> = measured rps / predicted rps, and each cell gets a verdict:</p>
<ul>
<li>{verdict_badge("as predicted")} efficiency within ±{tol} of 1 (<code>TOLERANCE</code>
in lab/model.py, from the measured repeat noise): the model explains the cell.</li>
<li>{verdict_badge("below model")} / {verdict_badge("above model")} more than {tol} off:
something the model does not know limits the server, or it does more at once than it
claims.</li>
<li>{verdict_badge("censored")} the cell could not complete {model.MIN_REQUESTS} requests even
lengthened to {model.MAX_CELL_S:g} s: its count is not a throughput and is not judged.</li>
<li>{verdict_badge("no model")} nothing to predict from (e.g. a remote server whose CPU the lab
cannot see).</li>
</ul>
<p>Observed during the load, beside the model: k6 at {lg} or more of its CPUs, or the server's
CPUs typically at {sb} or more (the <code>loadgen_bound</code> and
<code>server_cpu_bound</code> columns).</p>"""
    callout = ""
    flagged = [g for g in run.groups if g.loadgen_bound]
    if flagged:
        names = ", ".join(f"<code>{e(g.key)}</code>" for g in flagged)
        callout = (
            f'<p class="callout">⚠ {len(flagged)} cell(s) are limited by the load generator '
            f"(k6, or the upstream service on its CPUs) in the model: their throughput "
            f"measures k6, not the server: {names}</p>"
        )
    run_id = e(str(meta.get("run_id", run.path.name)))
    return (
        f"<header><h1>Run {run_id}</h1><dl>{dl}</dl>{problems}{callout}</header>"
        f'<section id="model">{how}</section>'
    )


def headline(run: Run) -> str:
    labels = endpoint_labels(run.groups)
    rows, classes = [], []
    for g in run.groups:
        r, errors = g.first, len(g.rows) - len(g.ok)
        rows.append(
            [
                e(r.target),
                e(r.profile),
                e(labels[g.key]),
                e(r.params or "-"),
                e(load_label(g.load)),
                str(len(g.ok)) + (f" (+{errors} err)" if errors else ""),
                num(g.rps),
                num(g.stat("lat_p95_ms")),
                num(g.stat("predicted_rps")),
                num(g.efficiency, 2),
                verdict_badge(g.verdict) + (' <span class="flag">noisy</span>' if g.noisy else ""),
                e(bound_text(g)),
            ]
        )
        classes.append("loadgen-row" if g.loadgen_bound else "")
    if not rows:
        return section("headline", "Results", "No cell has been measured in this run yet.", "")
    intro = (
        "One line per cell; when a cell was repeated, each number is the median over its "
        "repeats. rps = requests per second the server completed; p95 = 95 % of requests "
        "were at least this fast; predicted rps and efficiency as explained above. "
        "Highlighted rows are limited by the load generator in the model; <i>bound</i> names "
        "the limiting resource with the measured number behind it. The same table is in "
        "<code>summary.md</code>."
    )
    head = ["target", "profile", "endpoint", "params", "load", "repeats", "rps", "p95 ms",
            "predicted rps", "efficiency", "verdict", "bound"]  # fmt: skip
    return section("headline", "Results", intro, table(head, rows, classes))


def bound_text(g: Group) -> str:
    """The limiting resource with the measured number behind it (and why a cell is not
    judged, when it is censored)."""
    if g.censored:
        return f"censored: {g.censored}"
    row = next((r for r in g.ok if r.bound == g.bound), None)
    text = model.limit_text(g.bound, row) if row and g.bound else "-"
    if row and row.capacity and row.vus and row.vus >= model.FLOOD * row.capacity:
        wait = (row.predicted_latency_ms or 0) / 1000
        text += (
            f" · flood: {row.vus} VUs = {row.vus / row.capacity:.0f}× capacity, each waits "
            f"{wait:.1f} s on average (Little's law); a server that answers in bursts "
            "(FastAPI's def endpoints, hypercorn's blocked loop: CONTRACT.md) counts one burst "
            "more or less in a cell of a few rounds"
        )
    return text


def fit_section(run: Run, chart: ChartWriter) -> str:
    points = [
        charts.Point(f"{g.series} {g.first.endpoint}", pred, g.rps, g.bound)
        for g in run.groups
        if g.ok and not g.censored and g.rps and (pred := g.stat("predicted_rps"))
    ]
    if not points:
        return ""
    inside = sum(model.verdict("ok", p.measured / p.predicted) == "as predicted" for p in points)
    tol = f"{model.TOLERANCE:.0%}"
    figure = chart(
        "predicted-vs-measured",
        charts.predicted_vs_measured(points, "measured vs predicted throughput", model.TOLERANCE),
        f"Every modelled cell (median of its repeats); {inside} of {len(points)} within ±{tol}.",
    )
    intro = (
        "Each point is one cell: the throughput the model predicted before the load (x) "
        "against what k6 measured (y), on log-log axes, coloured by the resource the model "
        f"says limits it. On the diagonal the model is exact; the grey band is ±{tol}. "
        "Cells outside the band are named: the model misses something there."
    )
    return section("fit", "Predicted vs measured", intro, figure)


def throughput_section(run: Run, chart: ChartWriter) -> str:
    ok = [g for g in run.groups if g.ok]
    if not ok:
        return ""
    labels = endpoint_labels(ok)
    figures = []
    for load, groups in by_load(ok).items():
        bars = [
            charts.Bar(g.series, labels[g.key], g.rps, g.stat("predicted_rps"), g.loadgen_bound)
            for g in groups
        ]
        title = f"throughput at {load_label(load)}"
        figures.append(
            chart(
                f"throughput-{load_slug(load)}",
                charts.throughput(bars, title),
                f"Measured rps per endpoint at {e(load_label(load))}; the black tick with a "
                "diamond is the model's prediction for that bar.",
            )
        )
    intro = (
        "Bars: measured requests per second, one colour per target/profile, grouped by "
        "endpoint. The black tick over each bar is what the capacity model predicts: a bar "
        "reaching its tick is as predicted, a bar far below it lost throughput to something "
        "the model does not include. Hatched bars are limited by the load generator. The axis is "
        f"logarithmic when values span more than {charts.LOG_SPAN:g}x."
    )
    return section("throughput", "Throughput per target and endpoint", intro, "".join(figures))


def latency_section(run: Run, chart: ChartWriter) -> str:
    ok = [g for g in run.groups if g.ok]
    if not ok:
        return ""
    labels = endpoint_labels(ok)
    parts = []
    for load, groups in by_load(ok).items():
        spans = [
            charts.Span(
                f"{g.series} · {labels[g.key]}",
                g.stat("lat_p50_ms"),
                g.stat("lat_p95_ms"),
                g.stat("lat_p99_ms"),
                g.stat("predicted_latency_ms"),
            )
            for g in groups
        ]
        parts.append(
            chart(
                f"latency-{load_slug(load)}",
                charts.latency(spans, f"latency percentiles at {load_label(load)}"),
                f"Latency percentiles per cell at {e(load_label(load))}.",
            )
        )
        rows = [
            [
                e(g.series),
                e(labels[g.key]),
                num(g.stat("lat_p50_ms")),
                num(g.stat("lat_p95_ms")),
                num(g.stat("lat_p99_ms")),
                num(g.stat("predicted_latency_ms")),
            ]
            for g in groups
        ]
        head = ["target/profile", "endpoint", "p50 ms", "p95 ms", "p99 ms", "model mean ms"]
        parts.append(f"<details><summary>numbers</summary>{table(head, rows)}</details>")
    intro = (
        "For each cell: p50 (half the requests were faster), p95 and p99 (the slowest 5 % and "
        "1 % were slower than this). A long line from p50 to p99 means unequal treatment: some "
        "requests waited in a queue. The x is the model's mean latency (VUs / predicted rps), "
        "which includes queueing when VUs exceed capacity."
    )
    return section("latency", "Latency percentiles", intro, "".join(parts))


def efficiency_section(run: Run, chart: ChartWriter) -> str:
    ok = [g for g in run.groups if g.ok]
    if not ok:
        return ""
    labels = endpoint_labels(ok)
    figures = []
    for load, groups in by_load(ok).items():
        series = list(dict.fromkeys(g.series for g in groups))
        columns = list(dict.fromkeys(labels[g.key] for g in groups))
        cells = {(g.series, labels[g.key]): (g.efficiency, g.loadgen_bound) for g in groups}
        figures.append(
            chart(
                f"efficiency-{load_slug(load)}",
                charts.efficiency_heatmap(
                    series, columns, cells, f"efficiency at {load_label(load)}", model.TOLERANCE
                ),
                f"measured / predicted rps at {e(load_label(load))}.",
            )
        )
    tol = f"{model.TOLERANCE:.0%}"
    intro = (
        "Each square is measured rps / predicted rps for one target/profile and endpoint. "
        f"Green (within ±{tol} of 1) means the model explains the cell; orange to red is below "
        "the model (the further, the darker: 0.5 = half the predicted throughput), light to "
        "dark blue above it. Grey squares have no model (e.g. a remote server's cell); "
        "'loadgen' marks cells the model says k6 limits."
    )
    return section("efficiency", "Efficiency heat map", intro, "".join(figures))


def sweep_section(run: Run, chart: ChartWriter) -> str:
    closed = [g for g in run.groups if g.ok and not g.first.rate]
    by_series: dict[tuple[str, str, str], list[Group]] = {}
    for g in closed:
        by_series.setdefault((g.first.endpoint, g.first.params, g.series), []).append(g)
    swept = {k: sorted(v, key=lambda g: g.first.vus or 0) for k, v in by_series.items()}
    swept = {k: v for k, v in swept.items() if len(v) >= 2}
    if not swept:
        return ""
    endpoints: dict[tuple[str, str], list[charts.Line]] = {}
    for (endpoint, params, series), groups in swept.items():
        endpoints.setdefault((endpoint, params), []).append(
            charts.Line(
                series,
                [float(g.first.vus or 0) for g in groups],
                [g.rps for g in groups],
                [g.stat("lat_p95_ms") for g in groups],
                [g.stat("predicted_rps") for g in groups],
            )
        )
    figures = []
    for (endpoint, params), lines in endpoints.items():
        name = f"/{endpoint}" + (f"?{params}" if params else "")
        slug = "sweep-" + "".join(c if c.isalnum() else "-" for c in f"{endpoint}-{params}")
        figures.append(
            chart(
                slug.rstrip("-"),
                charts.sweep(lines, f"{name}: concurrency sweep"),
                f"{e(name)} at several VU levels.",
            )
        )
    intro = (
        "How each server scales when more requests arrive at once (only cells measured at two "
        "or more VU levels). Left: throughput, with the model's prediction dashed in the same "
        "colour: it rises linearly with VUs (each VU adds one request per service time) until "
        "the server's capacity, then stays flat. Right: p95 latency, which stays at the "
        "service time below capacity and grows in proportion to VUs / capacity beyond it, "
        "because the extra requests queue."
    )
    return section("sweeps", "Concurrency sweeps", intro, "".join(figures))


def canary_section(run: Run, chart: ChartWriter) -> str:
    ok = [g for g in run.groups if g.ok]
    rate = (run.meta.get("options") or {}).get("canary_rate")
    intro = (
        f"While each endpoint was under load, k6 also sent a few <code>/hello</code> requests "
        f"per second (the canary, {e(str(rate if rate is not None else '?'))}/s) to the same "
        "server and timed them. /hello does no work, so its latency shows whether the server "
        "can still answer anything while busy. This is where <b>blocking in async</b> shows: "
        "<code>/blocking</code> sleeps with a blocking call inside an async handler, which "
        "freezes the worker's event loop, so every canary request waits until the sleeps in "
        "front of it end: the canary explodes to hundreds of ms or seconds. Under "
        "<code>/async</code> (a non-blocking wait) and <code>/executor</code> (the blocking "
        "call moved to a thread) the loop stays free and the canary stays flat at a few ms. "
        "Thread- and process-based servers queue the canary once all their workers are busy."
    )
    with_canary = [g for g in ok if g.stat("canary_p99_ms") is not None]
    if not with_canary:
        return section(
            "canary", "The canary: /hello under load", intro, "<p>No canary data in this run.</p>"
        )
    labels = endpoint_labels(with_canary)
    parts = []
    for load, groups in by_load(with_canary).items():
        bars = [
            charts.Bar(g.series, labels[g.key], g.stat("canary_p99_ms"), g.stat("canary_p50_ms"))
            for g in groups
        ]
        parts.append(
            chart(
                f"canary-{load_slug(load)}",
                charts.canary(bars, f"/hello canary latency at {load_label(load)}"),
                "Bars: canary p99; white dots: canary p50, per endpoint under load at "
                f"{e(load_label(load))}.",
            )
        )
        rows = [
            [
                e(g.series),
                e(labels[g.key]),
                num(g.stat("canary_p50_ms")),
                num(g.stat("canary_p99_ms")),
            ]
            for g in groups
        ]
        head = ["target/profile", "endpoint under load", "canary p50 ms", "canary p99 ms"]
        parts.append(f"<details><summary>numbers</summary>{table(head, rows)}</details>")
    return section("canary", "The canary: /hello under load", intro, "".join(parts))


def repeats_section(run: Run) -> str:
    repeated = [g for g in run.groups if len(g.rows) >= 2]
    if not repeated:
        return ""
    rows, classes = [], []
    for g in repeated:
        values = g.rps_values
        rows.append(
            [
                f"<code>{e(g.key)}</code>",
                f"{len(values)} of {len(g.rows)}",
                ", ".join(num(v) for v in values) or "-",
                num(g.rps),
                num(min(values) if values else None),
                num(max(values) if values else None),
                pct(g.cv),
                '<span class="flag">noisy</span>' if g.noisy else "ok",
            ]
        )
        classes.append("noisy-row" if g.noisy else "")
    intro = (
        "Cells run several times (interleaved with other cells, never back to back). The "
        "headline numbers are the median; the coefficient of variation (CV = sample standard "
        "deviation / mean of the repeats' rps) says how much they disagree. A cell is flagged "
        f"<b>noisy</b> when CV > {NOISY_CV:.0%} (<code>NOISY_CV</code> in lab/runs.py): "
        "repeats on a quiet machine agree within a few percent, so more than that means "
        "something else competed for the machine, and differences smaller than the spread "
        "between min and max are not results."
    )
    head = ["cell", "ok repeats", "rps per repeat", "median rps", "min", "max", "CV", "noise"]
    return section("repeats", "Repetitions", intro, table(head, rows, classes))


def errors_section(run: Run) -> str:
    failed = [r for r in run.rows if r.status != "ok"]
    intro = (
        "Cells that could not be measured (the server did not start, crashed, or answered "
        "nothing). They are left out of the charts; the text is the runner's reason."
    )
    if not failed:
        return section("errors", "Errors", intro, "<p>No errors: every cell was measured.</p>")
    rows = [[f"<code>{e(r.cell)}</code>", e(r.status), e(r.error or "-")] for r in failed]
    return section("errors", "Errors", intro, table(["cell", "status", "error"], rows))


def _pid(value: Any) -> int | None:
    return None if value is None else int(value)


def timeline_section(run: Run, chart: ChartWriter) -> str:
    if not run.timelines:
        return ""
    parts = []
    for i, (name, data) in enumerate(run.timelines, 1):
        try:
            requests = [
                charts.Request(float(q["start_ms"]), float(q["end_ms"]), _pid(q.get("pid")))
                for q in (data or {})["requests"]
            ]
        except (KeyError, TypeError, ValueError):
            parts.append(f'<p class="warn">timelines/{e(name)} could not be read.</p>')
            continue
        assert data is not None
        cell = str(data.get("cell", name))
        span = (
            max(r.end_ms for r in requests) - min(r.start_ms for r in requests) if requests else 0
        )
        pids = len({r.pid for r in requests})
        capacity = data.get("capacity")
        caption = (
            f"<code>{e(cell)}</code>: {len(requests)} requests released at once (capacity "
            f"{e('unbounded' if capacity is None else str(capacity))}), finished within "
            f"{num(span, 0)} ms, served by {pids} process(es)."
        )
        parts.append(
            chart(f"timeline-{i}", charts.timeline(requests, f"timeline: {cell}"), caption)
        )
    intro = (
        "Individual requests of chosen cells, taken after the measurement: a batch of "
        "requests (twice the server's capacity, at most a few dozen) released at the same "
        "instant. Each bar runs from when a request was sent to when it was answered, one row "
        "per request in start order, coloured by the server process (pid) that served it. "
        "A server with capacity C answers the first C together after one service time, the "
        "next C after two: the staircase shows the queue."
    )
    return section("timelines", "Per-request timelines", intro, "".join(parts))


def _kv(data: dict[str, Any]) -> str:
    if not data:
        return "<p>-</p>"
    rows = "".join(
        f"<tr><th>{e(str(k))}</th><td>{e(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
        for k, v in data.items()
    )
    return f'<table class="kv">{rows}</table>'


def _capacity(capacity: Any) -> str:
    if not isinstance(capacity, dict):
        return "-"
    return ", ".join(f"{k}={'∞' if v is None else v}" for k, v in capacity.items())


def provenance_section(run: Run) -> str:
    meta = run.meta
    commit = str(meta.get("git_commit", "-")) + (" (dirty)" if meta.get("git_dirty") else "")
    general = {
        "git commit": commit,
        "cpu pinning": meta.get("cpus", {}),
        "knobs (environment)": meta.get("knobs", {}) or "none (target defaults)",
        "options": meta.get("options", {}),
    }
    servers = meta.get("servers") or {}
    rows = []
    for name, info in servers.items():
        info = info if isinstance(info, dict) else {}
        rows.append(
            [
                e(name),
                e(f"{info.get('framework', '-')} {info.get('framework_version', '')}"),
                e(f"{info.get('server', '-')} {info.get('server_version', '')}"),
                e(f"{info.get('language', '-')} {info.get('language_version', '')}"),
                e(str(info.get("workers", "-"))),
                e(str(info.get("threads", "-"))),
                e(str(info.get("cpus", "-"))),
                e(_capacity(info.get("capacity"))),
            ]
        )
    head = ["target/profile", "framework", "server", "language", "workers", "threads", "cpus",
            "capacity per endpoint (∞ = unbounded)"]  # fmt: skip
    server_table = table(head, rows) if rows else "<p>No server /info was recorded.</p>"
    raw = {k: v for k, v in meta.items() if k != "cells"}
    body = (
        f"<h3>Run</h3>{_kv(general)}<h3>Machine</h3>{_kv(meta.get('machine', {}))}"
        f"<h3>Versions</h3>{_kv(meta.get('versions', {}))}"
        f"<h3>Servers (their /info)</h3>{server_table}"
        f"<details><summary>run.json (without the cell list)</summary>"
        f"<pre>{e(json.dumps(raw, indent=2))}</pre></details>"
    )
    intro = (
        "What was measured, where and with what: enough to reproduce the run or to tell why "
        "two runs differ. The servers' capacity is what the model divides by."
    )
    return section("provenance", "Provenance", intro, body)


# --- the page -------------------------------------------------------------------------------

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;margin:0 auto;
max-width:1280px;padding:0 24px 48px}
h1{margin:24px 0 8px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
nav{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #eee;z-index:1}
nav a{margin-right:12px;font-size:13px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dt{color:#666}dd{margin:0}
.intro{max-width:920px;color:#333}.formula{font-weight:600;margin-left:24px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6}td{font-variant-numeric:tabular-nums}
table.kv th{width:180px;background:none;color:#666;font-weight:normal}
.v{padding:1px 6px;border-radius:8px;font-size:12px;white-space:nowrap}
.v-ok{background:#d9f2e0;color:#135e2b}.v-below{background:#fbdcd8;color:#8a1c12}
.v-above{background:#dbe8f7;color:#174a86}.v-cpubound{background:#eadcf5;color:#4d1f73}.v-loadgen{background:#ffe2b3;color:#7a4700}
.v-nomodel{background:#eee;color:#555}.v-error{background:#8a1c12;color:#fff}
.flag{background:#ffe2b3;color:#7a4700;padding:1px 6px;border-radius:8px;font-size:12px}
tr.loadgen-row td{background:#fff4e0}tr.noisy-row td{background:#fff8e8}
.warn{color:#8a1c12}.callout{background:#fff4e0;border-left:4px solid #f0a020;padding:8px 12px}
figure.chart{margin:16px 0;overflow-x:auto}figure.chart svg{max-width:100%;height:auto}
figcaption{color:#555;font-size:13px}.png{color:#999;font-size:12px}pre{background:#f6f6f6;padding:8px;overflow-x:auto}
details{margin:4px 0 12px}summary{cursor:pointer;color:#555}
"""

# Counts the charts that really rendered (an inline SVG with a non-empty box, or a loaded
# image) into <body data-rendered>, so a headless browser can check the page from outside.
SCRIPT = """
(function () {
  function count() {
    var figures = document.querySelectorAll('figure.chart'), n = 0;
    figures.forEach(function (f) {
      var svg = f.querySelector('svg'), img = f.querySelector('img');
      if (svg) {
        var box = svg.getBoundingClientRect(), inner = svg.getBBox();
        if (box.width > 0 && box.height > 0 && inner.width > 0) n++;
      } else if (img && img.complete && img.naturalWidth > 0) n++;
    });
    document.body.setAttribute('data-charts', String(figures.length));
    document.body.setAttribute('data-rendered', String(n));
  }
  count();
  window.addEventListener('load', count);
})();
"""


SECTIONS = ("headline", "throughput", "fit", "latency", "efficiency", "sweeps", "canary", "repeats",
            "errors", "timelines", "provenance")  # fmt: skip


def render(run: Run, chart: ChartWriter) -> str:
    sections = [
        headline(run),
        throughput_section(run, chart),
        fit_section(run, chart),
        latency_section(run, chart),
        efficiency_section(run, chart),
        sweep_section(run, chart),
        canary_section(run, chart),
        repeats_section(run),
        errors_section(run),
        timeline_section(run, chart),
        provenance_section(run),
    ]
    body = "".join(s for s in sections if s)
    anchors = ["model"] + [a for a in SECTIONS if f'<section id="{a}">' in body]
    nav = "".join(f'<a href="#{a}">{a}</a>' for a in anchors)
    run_id = e(str(run.meta.get("run_id", run.path.name)))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>lab report {run_id}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{STYLE}</style></head><body>"
        f"<nav>{nav}</nav>{header(run)}{body}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


TEXT_COLUMNS = ("target", "profile", "endpoint", "params", "verdict", "bound")


def plain(value: float | None, digits: int = 1) -> str:
    return num(value, digits).replace(",", "")


def summary_md(run: Run) -> str:
    meta = run.meta
    matrix = (meta.get("matrix") or {}).get("name", "-")
    lines = [
        f"# Run {meta.get('run_id', run.path.name)}",
        "",
        f"Status: {meta.get('status', 'unknown')}; matrix: {matrix}; commit "
        f"{str(meta.get('git_commit', '-'))[:12]}; {len(run.rows)} cells measured. "
        "Repeated cells are aggregated as the median over their repeats; efficiency = "
        f"measured / predicted rps; 'as predicted' = within ±{model.TOLERANCE:.0%}.",
        "",
    ]
    rated = any(g.first.rate for g in run.groups)
    head = ["target", "profile", "endpoint", "params", "VUs", *(["rate"] if rated else []),
            "repeats", "rps", "p95 ms", "predicted rps", "efficiency", "verdict",
            "bound"]  # fmt: skip
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" if h in TEXT_COLUMNS else "--:" for h in head) + "|")
    for g in run.groups:
        r = g.first
        cells = [r.target, r.profile, r.endpoint, r.params or "-", str(r.vus or "-"),
                 *([str(r.rate or "-")] if rated else []), str(len(g.ok)),
                 plain(g.rps), plain(g.stat("lat_p95_ms")), plain(g.stat("predicted_rps")),
                 plain(g.efficiency, 2), g.verdict + (" (noisy)" if g.noisy else ""),
                 g.bound or "-"]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if not run.groups:
        lines.append("\n(no cell has been measured yet)")
    return "\n".join(lines) + "\n"


def build(run_dir: Path) -> Path:
    """Write report.html, charts/*.png and summary.md into the run folder; returns the HTML."""
    run = read_run(Path(run_dir))
    chart = ChartWriter(run.path / "charts")
    page = render(run, chart)
    out = run.path / "report.html"
    out.write_text(page)
    (run.path / "summary.md").write_text(summary_md(run))
    return out
