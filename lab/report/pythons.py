"""The report's interpreter section: which Python interpreters a run used (version,
implementation, whether the GIL was on in its servers), whether a free-threaded one was there
at all, and, when the run has more than one, every cell side by side per interpreter: rps and
p95 each, and their ratio to the oldest interpreter. summary.md gets the same table.

Interpreters come from the cell ids (fastapi/uvicorn+py3.13/...; lab.matrix.python_of), their
facts from run.json's `interpreters` and the rows' python, python_impl and gil columns."""

from __future__ import annotations

from dataclasses import dataclass

from lab.interpreters import how_to_get, version_key
from lab.matrix import python_of, python_suffix
from lab.record import to_text
from lab.report import charts
from lab.report.compare import ASSUMED_CV, NOISE_SIGMAS
from lab.report.figures import Chart, ChartWriter
from lab.report.format import plain
from lab.report.groups import Group, GroupedRun
from lab.report.sections import endpoint_labels

Load = tuple[int, int]


@dataclass(frozen=True)
class Interpreter:
    label: str  # "3.13"
    version: str  # "3.13.0"
    implementation: str  # "cpython"
    free_threaded: bool  # the build
    gil: str  # at runtime, from the servers' /info: "on", "off", "on in 3 of 5 cells", "-"
    env: str
    cells: int


@dataclass(frozen=True)
class Side:
    """One cell on one interpreter."""

    rps: float | None
    p95: float | None
    noisy: bool


@dataclass(frozen=True)
class Ratio:
    """A side against the baseline's: rps and p95 as multiples, and whether the rps change
    exceeds the noise (as `lab compare` judges it)."""

    rps: float | None
    p95: float | None
    significant: bool


@dataclass(frozen=True)
class Comparison:
    series: str  # target/profile
    endpoint: str
    load: Load
    sides: list[Side | None]  # per interpreter, in Interpreters.labels order
    ratios: list[Ratio | None]  # per non-baseline interpreter


@dataclass(frozen=True)
class Interpreters:
    used: list[Interpreter]
    labels: list[str]  # the compared interpreters, oldest first; labels[0] is the baseline
    rows: list[Comparison]
    chart: Chart | None
    free_threaded: str  # one plain sentence: was a free-threaded interpreter there, and used?

    @property
    def baseline(self) -> str:
        return self.labels[0] if self.labels else ""


def _csv_interpreters(run: GroupedRun) -> dict[str, tuple[str, str, str]]:
    """cell id -> (python, python_impl, gil as "true", "false" or "") as the rows recorded
    them (older runs: none)."""
    return {r.cell: (r.python, r.python_impl, to_text(r.gil)) for r in run.rows if r.python}


def _label(version: str, free_threaded: bool) -> str:
    return ".".join(version.split(".")[:2]) + ("t" if free_threaded else "")


def _gil_text(values: list[str]) -> str:
    on = values.count("true")
    off = values.count("false")
    if not on and not off:
        return "-"
    if not off:
        return "on"
    if not on:
        return "off"
    return f"off in {off} of {on + off} cells"


def _used(run: GroupedRun) -> list[Interpreter]:
    """Every interpreter the run's Python cells ran on, oldest first."""
    record = run.meta.interpreters or {}
    known = {i["label"]: i for i in record.get("used", []) if isinstance(i, dict) and "label" in i}
    recorded = _csv_interpreters(run)
    seen: dict[str, list[tuple[str, str, str]]] = {}
    for r in run.rows:
        facts = recorded.get(r.cell)
        label = python_of(r.cell)
        if not label and facts:
            label = _label(facts[0], facts[2] == "false")
        if label:
            seen.setdefault(label, []).append(facts or ("", "", ""))
    for label in known:
        seen.setdefault(label, [])
    if not seen:  # a run from before the interpreter record: what its servers' /info said
        for key, info in (run.meta.servers or {}).items():
            if isinstance(info, dict) and info.get("language") == "python":
                version = str(info.get("language_version", "?"))
                gil = info.get("gil_enabled")
                facts = (
                    version,
                    str(info.get("python_implementation", "")),
                    "" if gil is None else str(bool(gil)).lower(),
                )
                n = sum(f"{r.target}/{r.profile}" == key for r in run.rows)
                seen.setdefault(_label(version, False), []).extend([facts] * n)
    out = []
    for label in sorted(seen, key=version_key):
        facts, meta = seen[label], known.get(label, {})
        versions = sorted({f[0] for f in facts if f[0]}) or [str(meta.get("version", "?"))]
        impls = sorted({f[1] for f in facts if f[1]}) or [str(meta.get("implementation", "?"))]
        out.append(
            Interpreter(
                label=label,
                version=", ".join(versions),
                implementation=", ".join(impls),
                free_threaded=bool(meta.get("free_threaded", label.endswith("t"))),
                gil=_gil_text([f[2] for f in facts]),
                env=str(meta.get("env", "-")),
                cells=len(facts),
            )
        )
    return out


def free_threaded_note(run: GroupedRun, used: list[Interpreter]) -> str:
    threaded = [i for i in used if i.free_threaded]
    if threaded:
        return (
            "; ".join(
                f"{i.label} is a free-threaded build; the GIL was {i.gil} in its servers"
                + (" (an extension that is not declared free-thread-safe turns it back on)")
                * (i.gil != "off")
                for i in threaded
            )
            + "."
        )
    record = run.meta.interpreters
    if record is None:
        return "This run did not record which interpreters were set up (it predates the record)."
    ready = [i.get("label") for i in record.get("available", []) if isinstance(i, dict)]
    ready_ft = [str(x) for x in ready if str(x).endswith("t")]
    if ready_ft:
        return (
            f"A free-threaded interpreter ({', '.join(ready_ft)}) was set up but this run did "
            f"not use it: add it to --python to see what threads do without the GIL."
        )
    return (
        "No free-threaded interpreter was available on this machine: every Python cell ran "
        "with the GIL, so this run says nothing about threads without it. To add one: "
        f"{how_to_get('3.13t')}, then `just setup` and --python …,3.13t."
    )


def _base_key(g: Group) -> str:
    """The cell's id without its interpreter: what one cell on several interpreters shares."""
    label = python_of(g.key)
    return g.key.replace(python_suffix(label), "", 1) if label else g.key


def _side(g: Group | None) -> Side | None:
    if g is None or not g.ok:
        return None
    return Side(g.rps, g.stat("lat_p95_ms"), g.noisy)


def _ratio(base: Group | None, other: Group | None) -> Ratio | None:
    if base is None or other is None or not base.rps or other.rps is None:
        return None
    measured = [c for c in (base.cv, other.cv) if c is not None]
    noise = (sum(c * c for c in measured) / len(measured)) ** 0.5 if measured else ASSUMED_CV
    rps = other.rps / base.rps
    p95_base, p95_other = base.stat("lat_p95_ms"), other.stat("lat_p95_ms")
    p95 = p95_other / p95_base if p95_base and p95_other is not None else None
    return Ratio(rps, p95, abs(rps - 1) > NOISE_SIGMAS * noise)


def interpreters(run: GroupedRun, draw: ChartWriter | None) -> Interpreters | None:
    """The section; None when the run has no Python cell at all. draw=None: no chart."""
    used = _used(run)
    if not used:
        return None
    labels = [i.label for i in used]
    rows: list[Comparison] = []
    chart = None
    if len(labels) > 1:
        cells: dict[str, dict[str, Group]] = {}
        for g in run.groups:
            label = python_of(g.key)
            if label:
                cells.setdefault(_base_key(g), {})[label] = g
        names = endpoint_labels(run.groups)
        bars = []
        for per in cells.values():
            first = next(iter(per.values()))
            base = per.get(labels[0])
            rows.append(
                Comparison(
                    series=f"{first.first.target}/{first.first.profile}",
                    endpoint=names[first.key],
                    load=first.load,
                    sides=[_side(per.get(label)) for label in labels],
                    ratios=[_ratio(base, per.get(label)) for label in labels[1:]],
                )
            )
            for label in labels:
                g = per.get(label)
                if g is not None and g.ok:
                    category = f"{first.first.target}/{first.first.profile} · {names[first.key]}"
                    bars.append(
                        charts.Bar(
                            f"Python {label}",
                            category,
                            g.rps,
                            g.stat("predicted_rps"),
                            g.loadgen_bound,
                        )
                    )
        if bars and draw is not None:
            chart = draw("interpreters", charts.throughput(bars, "throughput per interpreter"))
    return Interpreters(used, labels, rows, chart, free_threaded_note(run, used))


def interpreters_md(run: GroupedRun) -> list[str]:
    """summary.md's part: the interpreters, the free-threaded note, the side-by-side table."""
    data = interpreters(run, None)
    if data is None:
        return []
    lines = ["", "## Interpreters", ""]
    for i in data.used:
        lines.append(
            f"- Python {i.label}: {i.implementation} {i.version}, GIL {i.gil}, "
            f"rows: {i.cells}, environment: {i.env}"
        )
    lines += ["", data.free_threaded]
    if not data.rows:
        return [*lines, ""]
    others = data.labels[1:]
    head = ["target/profile", "endpoint", "VUs"]
    head += [f"{x} {what}" for x in data.labels for what in ("rps", "p95 ms")]
    head += [f"{x}/{data.baseline} {what}" for x in others for what in ("rps", "p95")]
    lines += ["", "| " + " | ".join(head) + " |", "|---|---|" + "--:|" * (len(head) - 2)]
    for row in data.rows:
        cells = [row.series, row.endpoint, str(row.load[1])]
        for side in row.sides:
            cells += [plain(side.rps), plain(side.p95)] if side else ["-", "-"]
        for ratio in row.ratios:
            if ratio is None:
                cells += ["-", "-"]
                continue
            mark = "" if ratio.significant else " (noise)"
            cells += [f"{plain(ratio.rps, 2)}{mark}", plain(ratio.p95, 2)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        f"\nRatios are against Python {data.baseline}; (noise) = the rps change is within "
        f"{NOISE_SIGMAS:g} x the cells' measured spread ({ASSUMED_CV:.0%} when not repeated)."
    )
    return [*lines, ""]
