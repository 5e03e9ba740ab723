"""The report's charts as pure functions: plain data in, a matplotlib figure out, then the
figure as an SVG string (inlined in report.html) or a PNG file. Nothing here reads a run."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap, Normalize, to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: smaller SVG, selectable in the browser
        "svg.hashsalt": "lab-report",  # stable ids, so two builds of a run are identical
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "figure.dpi": 100,
    }
)

LOG_SPAN = 30.0  # a value axis goes logarithmic when its largest value is 30x its smallest
GREY = "#c8c8c8"
PREDICTED = "#222222"
EFFICIENCY_RANGE = 3.0  # log2: colours saturate at 1/8 and 8
ON_MODEL = "#3aa655"  # green: within the tolerance band
BELOW = ("#f6c8a0", "#a50f15")  # light orange just below the band .. dark red at 1/8
ABOVE = ("#c6dbef", "#08519c")  # light blue just above the band .. dark blue at 8


@dataclass(frozen=True)
class Bar:
    series: str  # target/profile
    category: str  # endpoint
    value: float | None
    predicted: float | None = None
    flagged: bool = False  # load generator was the bottleneck


@dataclass(frozen=True)
class Span:
    label: str
    p50: float | None
    p95: float | None
    p99: float | None
    predicted: float | None = None


@dataclass(frozen=True)
class Line:
    series: str
    vus: Sequence[float]
    rps: Sequence[float | None]
    p95: Sequence[float | None]
    predicted: Sequence[float | None]


@dataclass(frozen=True)
class Request:
    start_ms: float
    end_ms: float
    pid: int | None  # None: the reply did not say which process served it


def colours(n: int) -> list[str]:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [to_hex(cmap(i % cmap.N)) for i in range(n)]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _wants_log(values: Sequence[float | None]) -> bool:
    positive = [v for v in values if v is not None and v > 0]
    return bool(positive) and max(positive) / min(positive) >= LOG_SPAN


def _plain(value: float, _pos: object = None) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _log(ax: Axes, axis: str) -> None:
    """A logarithmic axis labelled 1, 10, 100 rather than 10^0, 10^1, 10^2."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_formatter(FuncFormatter(_plain))
    target.set_minor_formatter(NullFormatter())


def _from_zero(ax: Axes, axis: str, values: Sequence[float | None]) -> None:
    """A linear axis from 0 with room past the largest value, so no marker at the edge is cut
    in half (matplotlib's own margin is 5 % of the data's span, which is tiny when 100 vs 104
    ms start at 0)."""
    top = max((v for v in values if v is not None and math.isfinite(v)), default=0.0)
    high = top * 1.08 if top > 0 else None  # None: keep matplotlib's
    (ax.set_ylim if axis == "y" else ax.set_xlim)(0, high)


class _GroupedBars:
    """What the bar charts share: a group of bars per endpoint (category), one bar and one
    colour per target/profile (series) in each, a value axis that goes logarithmic when the
    values span LOG_SPAN, and a legend of the series with the chart's own markers after."""

    def __init__(self, bars: Sequence[Bar], height: float) -> None:
        self.bars = bars
        self.categories = _unique([b.category for b in bars])
        self.series = _unique([b.series for b in bars])
        self.palette = dict(zip(self.series, colours(len(self.series)), strict=True))
        self.width = 0.8 / max(len(self.series), 1)
        size = (max(7.0, 0.9 + 0.22 * len(bars) + 0.3 * len(self.categories)), height)
        self.fig, self.ax = plt.subplots(figsize=size)

    def x(self, b: Bar) -> float:
        """The middle of b's bar."""
        i, j = self.categories.index(b.category), self.series.index(b.series)
        return i - 0.4 + self.width * (j + 0.5)

    def finish(self, ylabel: str, title: str, markers: list[Artist]) -> Figure:
        ax, categories = self.ax, self.categories
        if _wants_log([b.value for b in self.bars] + [b.predicted for b in self.bars]):
            _log(ax, "y")
        ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
        ax.set_xlim(-0.6, len(categories) - 0.4)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        handles = [Patch(color=self.palette[s], label=s) for s in self.series] + markers
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(axis="x", visible=False)
        self.fig.tight_layout()
        return self.fig


def throughput(bars: Sequence[Bar], title: str) -> Figure:
    """Grouped bars of measured rps per endpoint, one colour per target/profile; the model's
    prediction is a black tick over each bar. Hatched bars: the load generator was the limit."""
    chart = _GroupedBars(bars, 4.2)
    ax, palette, width = chart.ax, chart.palette, chart.width
    for b in bars:
        x = chart.x(b)
        if b.value is not None:
            ax.bar(
                x,
                b.value,
                width * 0.92,
                color=palette[b.series],
                hatch="///" if b.flagged else None,
                edgecolor="#555555" if b.flagged else palette[b.series],
                linewidth=0.5,
            )
        if b.predicted is not None:
            ax.plot(
                [x - width * 0.5, x + width * 0.5],
                [b.predicted, b.predicted],
                color=PREDICTED,
                linewidth=2,
                solid_capstyle="butt",
            )
            ax.plot(x, b.predicted, marker="D", markersize=3.5, color=PREDICTED)
    markers: list[Artist] = [
        matplotlib.lines.Line2D([], [], color=PREDICTED, marker="D", markersize=3.5, label="model")
    ]
    if any(b.flagged for b in bars):
        markers.append(Patch(facecolor="white", edgecolor="#555555", hatch="///", label="loadgen"))
    return chart.finish("requests per second", title, markers)


def latency(spans: Sequence[Span], title: str) -> Figure:
    """One row per cell: a line from p50 to p99 with p50 (o), p95 (s) and p99 (^) marked and
    the model's mean latency as an x."""
    fig, ax = plt.subplots(figsize=(9.0, max(2.0, 0.8 + 0.24 * len(spans))))
    ys = list(range(len(spans)))[::-1]
    for y, s in zip(ys, spans, strict=True):
        known = [v for v in (s.p50, s.p99) if v is not None]
        if len(known) == 2:
            ax.plot(known, [y, y], color="#888888", linewidth=1.2, zorder=1)
        for value, marker, colour in (
            (s.p50, "o", "#1f77b4"),
            (s.p95, "s", "#ff7f0e"),
            (s.p99, "^", "#d62728"),
        ):
            if value is not None:
                ax.plot(value, y, marker=marker, color=colour, markersize=5, zorder=2)
        if s.predicted is not None:
            ax.plot(s.predicted, y, marker="x", color=PREDICTED, markersize=6, zorder=3)
    values = [v for s in spans for v in (s.p50, s.p95, s.p99, s.predicted)]
    if _wants_log(values):
        _log(ax, "x")
    else:
        _from_zero(ax, "x", values)  # a linear axis from 0: 100 vs 104 ms should look alike
    ax.set_yticks(ys, [s.label for s in spans])
    ax.set_ylim(-0.7, len(spans) - 0.3)
    ax.set_xlabel("latency (ms)")
    ax.set_title(title)
    ax.grid(axis="y", visible=False)
    legend = [
        matplotlib.lines.Line2D([], [], marker=m, color=c, linestyle="", label=lbl)
        for m, c, lbl in (
            ("o", "#1f77b4", "p50"),
            ("s", "#ff7f0e", "p95"),
            ("^", "#d62728", "p99"),
            ("x", PREDICTED, "model (mean)"),
        )
    ]
    ax.legend(handles=legend, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _mix(a: str, b: str, t: float) -> str:
    ra, rb = to_rgb(a), to_rgb(b)
    return to_hex(tuple(x + (y - x) * t for x, y in zip(ra, rb, strict=True)))


def efficiency_colour(eff: float, tolerance: float) -> str:
    """Green inside 1 ± tolerance; outside it, lighter to darker with the distance (log2)."""
    if 1 - tolerance <= eff <= 1 + tolerance:
        return ON_MODEL
    edge = math.log2(1 - tolerance) if eff < 1 else math.log2(1 + tolerance)
    far = -EFFICIENCY_RANGE if eff < 1 else EFFICIENCY_RANGE
    t = min(1.0, max(0.0, (math.log2(eff) - edge) / (far - edge)))
    low, high = BELOW if eff < 1 else ABOVE
    return _mix(low, high, t)


def efficiency_heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: dict[tuple[str, str], tuple[float | None, bool]],
    title: str,
    tolerance: float,
) -> Figure:
    """measured/predicted per row x column; (efficiency, loadgen-bound) per cell. Cells with
    no model are grey, those never measured are left blank."""
    fig, ax = plt.subplots(
        figsize=(max(5.0, 1.8 + 0.75 * len(columns)), max(2.3, 1.0 + 0.42 * len(rows)))
    )
    norm = Normalize(-EFFICIENCY_RANGE, EFFICIENCY_RANGE)
    for i, row in enumerate(rows):
        for j, col in enumerate(columns):
            if (row, col) not in cells:
                continue
            eff, flagged = cells[(row, col)]
            if eff is None or eff <= 0:
                colour, text, ink = GREY, "no model", "#555555"
            else:
                colour = efficiency_colour(eff, tolerance)
                text = f"{eff:.2f}"
                ink = "white" if sum(to_rgb(colour)) < 1.6 else "black"
            if flagged:
                text += "\nloadgen"
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white"))
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=7.5, color=ink)
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(columns))], columns, rotation=30, ha="right")
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows)
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    steps = [-EFFICIENCY_RANGE + 2 * EFFICIENCY_RANGE * (i + 0.5) / 256 for i in range(256)]
    cmap = ListedColormap([efficiency_colour(2.0**x, tolerance) for x in steps])
    mappable = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    bar = fig.colorbar(mappable, ax=ax, fraction=0.04, pad=0.02)
    ticks = range(-int(EFFICIENCY_RANGE), int(EFFICIENCY_RANGE) + 1)
    bar.set_ticks(list(ticks), labels=[_ratio(2.0**t) for t in ticks])
    bar.set_label("measured / predicted rps")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _ratio(value: float) -> str:
    return f"{value:g}" if value >= 1 else f"1/{1 / value:g}"


def sweep(lines: Sequence[Line], title: str) -> Figure:
    """rps (left) and p95 latency (right) against VUs, one colour per target/profile; the
    model's rps is the dashed line in the same colour."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 3.8))
    palette = colours(len(lines))
    for line, colour in zip(lines, palette, strict=True):
        left.plot(line.vus, _nan(line.rps), marker="o", color=colour, label=line.series)
        if any(p is not None for p in line.predicted):
            left.plot(line.vus, _nan(line.predicted), linestyle="--", color=colour, alpha=0.8)
        right.plot(line.vus, _nan(line.p95), marker="o", color=colour, label=line.series)
    all_vus = [v for line in lines for v in line.vus]
    for ax in (left, right):
        if _wants_log(all_vus) or (all_vus and max(all_vus) / max(min(all_vus), 1) >= 10):
            _log(ax, "x")
        ax.set_xticks(sorted(set(all_vus)))
        ax.xaxis.set_major_formatter(FuncFormatter(_plain))
        ax.set_xlabel("virtual users (concurrent requests)")
    rps = [v for line in lines for v in (*line.rps, *line.predicted)]
    if _wants_log(rps):
        _log(left, "y")
    else:
        _from_zero(left, "y", rps)
    p95 = [v for line in lines for v in line.p95]
    if _wants_log(p95):
        _log(right, "y")
    else:
        _from_zero(right, "y", p95)
    left.set_ylabel("requests per second")
    right.set_ylabel("p95 latency (ms)")
    left.set_title("throughput (dashed: model)")
    right.set_title("p95 latency")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else v for v in values]


def canary(bars: Sequence[Bar], title: str) -> Figure:
    """The /hello canary's p99 (bar) and p50 (white dot) while each endpoint was under load,
    one colour per target/profile. `value` is p99, `predicted` carries p50."""
    chart = _GroupedBars(bars, 4.0)
    for b in bars:
        x = chart.x(b)
        if b.value is not None:
            chart.ax.bar(x, b.value, chart.width * 0.92, color=chart.palette[b.series])
        if b.predicted is not None:
            chart.ax.plot(x, b.predicted, marker="o", markersize=4, color="white", mec="#222222")
    p50 = matplotlib.lines.Line2D(
        [], [], marker="o", color="white", mec="#222222", linestyle="", label="p50"
    )
    return chart.finish("/hello latency while loaded (ms)", title, [p50])


def timeline(requests: Sequence[Request], title: str) -> Figure:
    """Each request a horizontal bar from its start to its end, one row per request in start
    order, coloured by the process (pid) that served it."""
    ordered = sorted(requests, key=lambda r: (r.start_ms, r.end_ms))
    origin = min((r.start_ms for r in ordered), default=0.0)
    pids = sorted({r.pid for r in ordered}, key=lambda p: (p is None, p or 0))
    palette = dict(zip(pids, colours(len(pids)), strict=True))
    fig, ax = plt.subplots(figsize=(10.0, min(12.0, max(2.2, 1.2 + 0.09 * len(ordered)))))
    for pid in pids:
        rows = [(i, r) for i, r in enumerate(ordered) if r.pid == pid]
        ax.barh(
            [i for i, _ in rows],
            [max(r.end_ms - r.start_ms, 0.0) for _, r in rows],
            left=[r.start_ms - origin for _, r in rows],
            height=0.8,
            color=palette[pid],
            label=f"pid {pid}" if pid is not None else "pid unknown",
        )
    ax.set_ylim(len(ordered) - 0.5, -0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v) + 1}"))
    ax.set_xlabel("time since the first request started (ms)")
    ax.set_ylabel("request (in start order)")
    ax.set_title(title)
    ax.grid(axis="y", visible=False)
    if pids:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="served by")
    fig.tight_layout()
    return fig


def to_svg(fig: Figure) -> str:
    """The figure as an <svg> element (no XML prologue), ready to inline in HTML."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    start, end = text.find("<metadata>"), text.find("</metadata>")
    if start != -1 and end != -1:  # RDF namespaces only: nothing a browser needs
        text = text[:start] + text[end + len("</metadata>") :]
    return text


def save_png(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=110, metadata={"Software": None})
    return path


def close(fig: Figure) -> None:
    plt.close(fig)


@dataclass(frozen=True)
class Point:
    label: str
    predicted: float
    measured: float
    bound: str  # the model's limiting resource: the point's colour


def predicted_vs_measured(points: Sequence[Point], title: str, tolerance: float) -> Figure:
    """Every modelled cell as one point, measured rps against predicted rps on log-log axes,
    coloured by the resource that limits it; the diagonal is a perfect model and the grey band
    its tolerance. Points outside the band are labelled."""
    fig, ax = plt.subplots(figsize=(7.5, 6.0))
    values = [v for p in points for v in (p.predicted, p.measured) if v > 0]
    low, high = (min(values) / 1.6, max(values) * 1.6) if values else (1.0, 10.0)
    line = [low, high]
    ax.fill_between(
        line, [v * (1 - tolerance) for v in line], [v * (1 + tolerance) for v in line],
        color="#9a9a9a", alpha=0.45, linewidth=0, label=f"±{tolerance:.0%}",
    )  # fmt: skip
    ax.plot(line, line, color=PREDICTED, linewidth=0.8)
    bounds = _unique([p.bound or "no bound" for p in points])
    palette = dict(zip(bounds, colours(len(bounds)), strict=True))
    for b in bounds:
        mine = [p for p in points if (p.bound or "no bound") == b]
        ax.scatter(
            [p.predicted for p in mine], [p.measured for p in mine],
            s=22, color=palette[b], label=b, zorder=3, edgecolors="white", linewidths=0.4,
        )  # fmt: skip
    for p in points:
        if p.predicted > 0 and not (1 - tolerance <= p.measured / p.predicted <= 1 + tolerance):
            ax.annotate(p.label, (p.predicted, p.measured), fontsize=6.5, color="#444444",
                        xytext=(4, -3), textcoords="offset points")  # fmt: skip
    _log(ax, "x")
    _log(ax, "y")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("predicted requests per second (model, before the load)")
    ax.set_ylabel("measured requests per second")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", title="limited by", title_fontsize=8)
    fig.tight_layout()
    return fig
