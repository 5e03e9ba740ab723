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

from lab import model

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


@dataclass(frozen=True)
class Square:
    """One cell of the efficiency heat map."""

    efficiency: float | None  # None: no model
    flagged: bool  # the load generator was the bottleneck
    tolerance: float  # the share either way its verdict allowed (green inside it)


def efficiency_heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: dict[tuple[str, str], Square],
    title: str,
) -> Figure:
    """measured/predicted per row x column, each square green within its own tolerance. Cells
    with no model are grey, those never measured are left blank. The colour bar's scale is
    drawn at the base tolerance (lab.model.TOLERANCE)."""
    fig, ax = plt.subplots(
        figsize=(max(5.0, 1.8 + 0.75 * len(columns)), max(2.3, 1.0 + 0.42 * len(rows)))
    )
    norm = Normalize(-EFFICIENCY_RANGE, EFFICIENCY_RANGE)
    for i, row in enumerate(rows):
        for j, col in enumerate(columns):
            if (row, col) not in cells:
                continue
            square = cells[(row, col)]
            eff, flagged = square.efficiency, square.flagged
            if eff is None or eff <= 0:
                colour, text, ink = GREY, "no model", "#555555"
            else:
                colour = efficiency_colour(eff, square.tolerance)
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
    cmap = ListedColormap([efficiency_colour(2.0**x, model.TOLERANCE) for x in steps])
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


@dataclass(frozen=True)
class Probe:
    t: float  # seconds since the run's check
    cpu: int
    speed: float  # relative to that CPU's speed in the check


def stability(probes: Sequence[Probe], title: str) -> Figure:
    """Each CPU's speed at each probe between cells, relative to its speed in the check before
    the run (1 = as fast), one colour per CPU; the dotted lines are ±model.TOLERANCE."""
    fig, ax = plt.subplots(figsize=(8.0, 2.8))
    cpus = sorted({p.cpu for p in probes})
    for cpu, colour in zip(cpus, colours(len(cpus)), strict=True):
        mine = sorted((p for p in probes if p.cpu == cpu), key=lambda p: p.t)
        ax.plot([p.t for p in mine], [p.speed for p in mine], marker="o", markersize=3,
                linewidth=0.8, color=colour, label=f"CPU {cpu}")  # fmt: skip
    ax.axhline(1.0, color=PREDICTED, linewidth=0.8)
    for edge in (1 - model.TOLERANCE, 1 + model.TOLERANCE):
        ax.axhline(edge, color=PREDICTED, linewidth=0.6, linestyle=":")
    ax.set_xlabel("seconds since the check before the run")
    ax.set_ylabel("speed / the check's")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
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
    measured: float  # the median repeat's rps
    bound: str  # the model's limiting resource: the point's colour
    tolerance: float  # the cell's: its band is predicted x (1 ± tolerance)
    interval: tuple[float, float] | None = None  # 95 % confidence interval of rps (repeats)
    judged: bool = True  # as predicted: the point is not named


@dataclass(frozen=True)
class Box:
    """A rectangle in display pixels (y grows upwards, as matplotlib's display space)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        apart_x = self.x1 <= other.x0 or other.x1 <= self.x0
        return not apart_x and self.y0 < other.y1 and other.y0 < self.y1

    def inside(self, frame: Box) -> bool:
        across = frame.x0 <= self.x0 and self.x1 <= frame.x1
        return across and frame.y0 <= self.y0 and self.y1 <= frame.y1


LABEL_GAP = 5.0  # pixels between a point and its label
LABEL_PAD = 1.0  # pixels between two labels stacked one above the other
LABEL_TRIES = 60  # rows of label height tried above and below a point on either side


def place_labels(
    anchors: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    frame: Box,
    obstacles: Sequence[Box] = (),
) -> list[Box]:
    """Where each label goes: beside its anchor (a point, in pixels), right of it if it fits,
    else left of it, at the nearest height where its box overlaps no label placed before it
    and no obstacle (the points' markers), and stays inside the frame (the axes). Labels are
    placed top to bottom, so a cluster's labels stack in the order of their points; a label
    that finds no free place at all keeps its first place (never seen with LABEL_TRIES rows
    of the axes' height)."""
    placed: list[Box | None] = [None] * len(anchors)
    taken = list(obstacles)
    for i in sorted(range(len(anchors)), key=lambda i: (-anchors[i][1], anchors[i][0])):
        (x, y), (w, h) = anchors[i], sizes[i]
        candidates = []
        for k in range(LABEL_TRIES + 1):
            step = k * (h + LABEL_PAD)
            for dy in (-step, step) if k else (0.0,):  # below first: placed top to bottom
                for left in (x + LABEL_GAP, x - LABEL_GAP - w):
                    candidates.append(Box(left, y - h / 2 + dy, left + w, y + h / 2 + dy))
        free = (c for c in candidates if c.inside(frame) and not any(c.overlaps(t) for t in taken))
        box = next(free, candidates[0])
        placed[i] = box
        taken.append(box)
    return [b for b in placed if b is not None]


def predicted_vs_measured(points: Sequence[Point], title: str) -> Figure:
    """Every modelled cell as one point, measured rps against predicted rps on log-log axes,
    coloured by the resource that limits it; the diagonal is a perfect model. Each cell's
    tolerance band is a grey bar on the diagonal (prediction x (1 ± its tolerance)), and with
    repeats its 95 % confidence interval is an error bar through the point: where the two
    meet, the cell is as predicted. Cells judged otherwise are named, their labels placed by
    place_labels so none overlaps another."""
    fig, ax = plt.subplots(figsize=(8.0, 7.0))
    values = [v for p in points for v in (p.predicted, p.measured) if v > 0]
    # room on the right of the fastest cells for their names
    low, high = (min(values) / 1.6, max(values) * 3.0) if values else (1.0, 10.0)
    ax.plot([low, high], [low, high], color=PREDICTED, linewidth=0.8, zorder=1)
    xs = [p.predicted for p in points]
    ax.errorbar(
        xs, xs, yerr=[[p.predicted * p.tolerance for p in points]] * 2,
        fmt="none", ecolor="#8a8a8a", elinewidth=3.5, capsize=4, capthick=1.2, alpha=0.7,
        zorder=2,
    )  # fmt: skip
    bounds = _unique([p.bound or "no bound" for p in points])
    palette = dict(zip(bounds, colours(len(bounds)), strict=True))
    for b in bounds:
        mine = [p for p in points if (p.bound or "no bound") == b]
        ax.scatter(
            [p.predicted for p in mine], [p.measured for p in mine],
            s=22, color=palette[b], label=b, zorder=4, edgecolors="white", linewidths=0.4,
        )  # fmt: skip
        ranged = [p for p in mine if p.interval]
        if ranged:
            ax.errorbar(
                [p.predicted for p in ranged], [p.measured for p in ranged],
                yerr=[[max(0.0, p.measured - p.interval[0]) for p in ranged if p.interval],
                      [max(0.0, p.interval[1] - p.measured) for p in ranged if p.interval]],
                fmt="none", ecolor=palette[b], elinewidth=1.0, capsize=2.5, zorder=3,
            )  # fmt: skip
    _log(ax, "x")
    _log(ax, "y")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("predicted requests per second (model, before the load)")
    ax.set_ylabel("measured requests per second")
    ax.set_title(title)
    keys: list[Artist] = [
        matplotlib.lines.Line2D([], [], color="#8a8a8a", linewidth=3.5, alpha=0.7,
                                label="tolerance (per cell)"),
        matplotlib.lines.Line2D([], [], color="#444444", linewidth=1.0, marker="_",
                                markersize=6, label="95 % CI (repeats)"),
    ]  # fmt: skip
    handles = [*ax.get_legend_handles_labels()[0], *keys]
    # below the diagonal's far end, where a model that is right leaves the chart empty
    legend = ax.legend(handles=handles, fontsize=8, loc="lower right", title="limited by",
                       title_fontsize=8)  # fmt: skip
    fig.tight_layout()
    _label(fig, ax, [p for p in points if not p.judged and p.predicted > 0], points, legend)
    return fig


def _label(
    fig: Figure, ax: Axes, points: Sequence[Point], every: Sequence[Point], legend: Artist
) -> None:
    """Name each of `points` where place_labels finds room, clear of every point's marker and
    of the legend; a
    thin line leads from a point to a label moved off its own row. Positions are worked out
    in the figure's pixels once it is laid out, and kept in points and data coordinates, so
    the SVG and the PNG (other resolutions) show the same layout."""
    if not points:
        return
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    to_points = 72.0 / fig.dpi
    anchors = [tuple(ax.transData.transform((p.predicted, p.measured))) for p in points]
    texts = [ax.annotate(p.label, (p.predicted, p.measured), fontsize=6.5, color="#444444",
                         xytext=(0, 0), textcoords="offset points", va="center", ha="left")
             for p in points]  # fmt: skip
    sizes = []
    for t in texts:
        extent = t.get_window_extent(renderer)
        sizes.append((extent.width, extent.height))
    markers = [Box(x - 4, y - 4, x + 4, y + 4) for x, y in (
        ax.transData.transform((p.predicted, p.measured)) for p in every)]  # fmt: skip
    frame = ax.get_window_extent(renderer)
    key = legend.get_window_extent(renderer)
    markers.append(Box(key.x0, key.y0, key.x1, key.y1))
    boxes = place_labels(
        [(float(x), float(y)) for x, y in anchors], sizes,
        Box(frame.x0, frame.y0, frame.x1, frame.y1), markers,
    )  # fmt: skip
    for (x, y), box, text in zip(anchors, boxes, texts, strict=True):
        middle = (box.y0 + box.y1) / 2
        text.set_position(((box.x0 - x) * to_points, (middle - y) * to_points))
        if abs(middle - y) > box.y1 - box.y0:  # moved off its row: a leader line
            edge = ax.transData.inverted().transform((box.x0 if box.x0 > x else box.x1, middle))
            ax.plot([ax.transData.inverted().transform((x, y))[0], edge[0]],
                    [ax.transData.inverted().transform((x, y))[1], edge[1]],
                    color="#999999", linewidth=0.5, zorder=2)  # fmt: skip
