"""Published claims, re-run: widely read posts whose experiments the lab re-creates.

A post is a matrix in k6/matrices/ with a [post] table (title, year, what it measured) and
[[post.claims]] (one published figure each, naming the explicit [[cells]] entry that
re-creates it). Per claim the lab shows three numbers side by side: what the post published,
what this run measured, and what the capacity model predicts for the cell, with a one-line
reading of why they differ. Figures are facts with a citation; no text of the posts is copied.

Metrics a claim can compare (all from results.csv; repeats of a cell: the median):
  rps         requests per second                     predicted: predicted_rps
  latency_ms  mean latency                            predicted: predicted_latency_ms
  latency_s   the same in seconds
  makespan_s  a burst released at once: the last answer (lat_max_ms)
                                                      predicted: k / predicted_rps, the
                                                      model's last answer (a burst's rps is
                                                      k over it: ceil(k / C) holds)
  total_s     `per` requests from one sequential client: per / rps
                                                      predicted: per / predicted_rps
A claim with `minus` compares the difference between two cells (what a third call adds).

A reading may name this run's numbers: {measured}, {predicted}, {published} (in the claim's
unit), {gap} (measured - predicted), {per_request_ms} (total_s: the gap per request, in ms),
{over_wait_ms} (the time one request took beyond the contract's wait S, in ms), {factor}
(published / measured), {verdict} (the model's verdict on the claim's figure: "as predicted
(1.00)", "below the model (0.87)", "above the model (1.12)": measured / predicted for rps,
predicted / measured for a time, judged by model.verdict). Differences carry their own sign
("+1.2", "-0.1"), so a reading never says "+ -0.1". A reading states a verdict or a number
only through these: its fixed words must hold whatever the run measures (tests check every
reading against its figures).

`lab reproduce POST` (`just reproduce`) is bench-all of the post's matrix: its parser and
function are at the end of this file.
"""

from __future__ import annotations

import math
import statistics
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab import model
from lab.contract import load as load_contract
from lab.matrix import Matrix, MatrixError, load_matrix, names, spec_cell
from lab.record import CellResult
from lab.rundir import Run
from lab.targets import UnknownChoice, discover

METRICS = ("rps", "latency_ms", "latency_s", "makespan_s", "total_s")
PLACEHOLDERS = (
    "measured",
    "predicted",
    "published",
    "gap",
    "per_request_ms",
    "over_wait_ms",
    "factor",
    "verdict",
)
UNITS = {"rps": "rps", "latency_ms": "ms", "latency_s": "s", "makespan_s": "s", "total_s": "s"}


@dataclass(frozen=True)
class Post:
    name: str  # the matrix's name: `just reproduce NAME`
    title: str
    year: int | None
    experiment: str

    @property
    def citation(self) -> str:
        return f'"{self.title}" ({self.year if self.year else "year not recorded"})'


@dataclass(frozen=True)
class Claim:
    id: str
    label: str
    published: float
    metric: str
    cell: str  # name of a [[cells]] entry
    reading: str
    minus: str | None = None
    per: int | None = None  # total_s: requests per published figure

    @property
    def unit(self) -> str:
        return UNITS[self.metric]


@dataclass(frozen=True)
class Line:
    """One claim, measured: the three columns and the reading."""

    claim: Claim
    measured: float | None
    predicted: float | None
    note: str = ""  # why a column is empty (no row, an error)
    wait_ms: float | None = None  # the contract's wait S of one request (no minus claim)
    tolerance: float | None = None  # the cell's (its rows'; None: model.TOLERANCE)

    @property
    def efficiency(self) -> float | None:
        """Measured against predicted as a verdict reads it (a slower answer is below the
        model): rps measured / predicted, a time predicted / measured; None for the
        difference of two cells or without both."""
        m, p = self.measured, self.predicted
        if self.claim.minus or not m or not p:
            return None
        return m / p if self.claim.metric == "rps" else p / m

    @property
    def verdict(self) -> str:
        """model.verdict on the claim's figure ('no model' without one)."""
        return model.verdict("ok", self.efficiency, "", self.tolerance)

    @property
    def request_ms(self) -> float | None:
        """The time one request took, in ms, from the measured figure (None for rps)."""
        m, c = self.measured, self.claim
        if m is None or c.metric == "rps":
            return None
        if c.metric == "total_s":
            return m / (c.per or 1) * 1000
        return m if c.metric == "latency_ms" else m * 1000


# --- the data -------------------------------------------------------------------------------


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MatrixError(f"{where}: {key} must be a non-empty string")
    return value


def post_of(matrix: Matrix) -> Post:
    raw = matrix.post
    where = f"matrix {matrix.name}: [post]"
    year = raw.get("year")
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
        raise MatrixError(f"{where}: year must be an integer, got {year!r}")
    return Post(matrix.name, _text(raw, "title", where), year, _text(raw, "experiment", where))


def claims_of(matrix: Matrix) -> list[Claim]:
    """The post's claims, checked: known metric, a number, cells that exist, unique ids."""
    cells = {c.get("name") for c in matrix.cells}
    raws = matrix.post.get("claims") or []
    if not raws:
        raise MatrixError(f"matrix {matrix.name}: [post] has no [[post.claims]]")
    claims: list[Claim] = []
    for raw in raws:
        where = f"matrix {matrix.name}: claim {raw.get('id', '?')}"
        metric = _text(raw, "metric", where)
        if metric not in METRICS:
            raise MatrixError(f"{where}: metric {metric!r}; choose from: {', '.join(METRICS)}")
        published = raw.get("published")
        if isinstance(published, bool) or not isinstance(published, int | float):
            raise MatrixError(f"{where}: published must be a number, got {published!r}")
        if not math.isfinite(published) or published < 0:
            raise MatrixError(f"{where}: published must be a finite number >= 0")
        for key in ("cell", "minus"):
            if key in raw and raw[key] not in cells:
                raise MatrixError(f"{where}: {key} {raw[key]!r} is not one of the [[cells]] names")
        per = raw.get("per")
        if (metric == "total_s") != (per is not None):
            raise MatrixError(f"{where}: per (requests per figure) goes with metric total_s only")
        if per is not None and (isinstance(per, bool) or not isinstance(per, int) or per < 1):
            raise MatrixError(f"{where}: per must be an integer >= 1")
        claim = Claim(
            id=_text(raw, "id", where),
            label=_text(raw, "label", where),
            published=float(published),
            metric=metric,
            cell=_text(raw, "cell", where),
            reading=_text(raw, "reading", where),
            minus=raw.get("minus"),
            per=per,
        )
        for _, field, spec, conversion in string.Formatter().parse(claim.reading):
            if field is not None and (field not in PLACEHOLDERS or spec or conversion):
                known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                raise MatrixError(f"{where}: reading names {{{field}}}; it may name {known}")
        if any(c.id == claim.id for c in claims):
            raise MatrixError(f"{where}: duplicate id")
        claims.append(claim)
    return claims


def is_post(matrix: Matrix) -> bool:
    return bool(matrix.post)


def posts() -> list[str]:
    """Names of the matrices that re-create a post."""
    return [name for name in names() if is_post(load_matrix(name))]


def load_post(name: str) -> Matrix:
    """A post's matrix by name; an unknown name lists the valid ones."""
    valid = posts()
    if name not in valid:
        raise UnknownChoice("post", name, valid)
    return load_matrix(name)


def cell_keys(matrix: Matrix) -> dict[str, str]:
    """[[cells]] name -> the cell id without its #repeat (what results.csv rows share)."""
    contract, targets = load_contract(), discover()
    return {
        spec["name"]: spec_cell(spec, matrix, contract, targets).id.rsplit("#", 1)[0]
        for spec in matrix.cells
    }


# --- measured ---------------------------------------------------------------------------------


Getter = Callable[[CellResult], float | None]


def ok_by_key(rows: list[CellResult]) -> dict[str, list[CellResult]]:
    """The rows that measured something (status ok), by cell key (repeats together)."""
    by_key: dict[str, list[CellResult]] = {}
    for row in rows:
        if row.status == "ok":
            by_key.setdefault(row.key, []).append(row)
    return by_key


def _median(rows: list[CellResult], get: Getter) -> float | None:
    values = [v for v in (get(r) for r in rows) if v is not None]
    return statistics.median(values) if values else None


def _column(column: str) -> Getter:
    return lambda r: getattr(r, column)


def _per_request_s(column: str) -> Getter:
    return lambda r: None if (v := getattr(r, column)) is None else v / 1000


def _inverse(column: str, per: int) -> Getter:
    return lambda r: per / v if (v := getattr(r, column)) else None


def _makespan(r: CellResult) -> float | None:
    """The model's last answer of a burst of k = VUs requests, in s: k / predicted rps."""
    return r.vus / r.predicted_rps if r.vus and r.predicted_rps else None


def _getters(claim: Claim) -> tuple[Getter, Getter]:
    """(measured, predicted) for one row, in the claim's unit."""
    match claim.metric:
        case "rps":
            return _column("rps"), _column("predicted_rps")
        case "latency_ms":
            return _column("lat_avg_ms"), _column("predicted_latency_ms")
        case "latency_s":
            return _per_request_s("lat_avg_ms"), _per_request_s("predicted_latency_ms")
        case "makespan_s":
            return _per_request_s("lat_max_ms"), _makespan
        case _:  # total_s
            per = claim.per or 1
            return _inverse("rps", per), _inverse("predicted_rps", per)


def measure(
    claims: list[Claim], keys: dict[str, str], results: dict[str, list[CellResult]]
) -> list[Line]:
    """Each claim with its measured and predicted value from this run's rows."""
    lines = []
    for claim in claims:
        measured_of, predicted_of = _getters(claim)
        names_ = [claim.cell] + ([claim.minus] if claim.minus else [])
        rows = [results.get(keys[n], []) for n in names_]
        missing = [n for n, r in zip(names_, rows, strict=True) if not r]
        if missing:
            lines.append(Line(claim, None, None, f"cell {', '.join(missing)} was not measured"))
            continue
        measured = [_median(r, measured_of) for r in rows]
        predicted = [_median(r, predicted_of) for r in rows]
        wait = None if claim.minus else _median(rows[0], _column("service_ms"))
        tolerance = _median(rows[0], _column("tolerance"))

        def combine(values: list[float | None]) -> float | None:
            if any(v is None for v in values):
                return None
            return values[0] - values[1] if len(values) == 2 else values[0]  # type: ignore[operator]

        line = Line(claim, combine(measured), combine(predicted), "", wait, tolerance)
        lines.append(line)
    return lines


@dataclass
class Reproduction:
    post: Post
    lines: list[Line]


def from_run(run: Run) -> Reproduction | None:
    """The claims of the post a run re-created (from its run.json), measured by its rows;
    None when the run did not re-create a post."""
    raw = run.meta.matrix or {}
    if "name" not in raw:  # an older or broken run.json
        return None
    matrix = Matrix(name=raw["name"], cells=raw.get("cells") or [], post=raw.get("post") or {})
    if not is_post(matrix):
        return None
    claims = claims_of(matrix)
    lines = measure(claims, cell_keys(matrix), ok_by_key(run.rows))
    return Reproduction(post_of(matrix), lines)


# --- the table --------------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "rps" and abs(value) >= 1000:
        return f"{value:,.0f}"
    digits = 1 if unit == "ms" or abs(value) >= 100 else 2
    return f"{value:,.{digits}f}"


def signed(value: float | None, unit: str) -> str:
    """A difference with its own sign: '+1.2', '-0.1' ('-' where unknown)."""
    if value is None:
        return "-"
    text = fmt(abs(value), unit)
    return text if text.strip("0.,") == "" else ("-" if value < 0 else "+") + text


VERDICT_WORDS = {"below model": "below the model", "above model": "above the model"}


def verdict_text(line: Line) -> str:
    """{verdict}: the model's verdict on the figure, with measured / predicted."""
    eff = line.efficiency
    if eff is None:
        return "not judged (no prediction)" if line.predicted is None else "not judged"
    return f"{VERDICT_WORDS.get(line.verdict, line.verdict)} ({eff:.2f})"


def reading_of(line: Line) -> str:
    """The claim's reading with this run's numbers filled in ("-" where unknown)."""
    c, m, p = line.claim, line.measured, line.predicted
    gap = None if m is None or p is None else m - p
    per_request = gap / c.per * 1000 if gap is not None and c.per else None
    request, wait = line.request_ms, line.wait_ms
    values = {
        "measured": fmt(m, c.unit),
        "predicted": fmt(p, c.unit),
        "published": fmt(c.published, c.unit),
        "gap": signed(gap, c.unit),
        "per_request_ms": signed(per_request, "ms"),
        "over_wait_ms": signed(None if request is None else request - (wait or 0.0), "ms"),
        "factor": f"{c.published / m:.1f}x" if m else "-",
        "verdict": verdict_text(line),
    }
    return c.reading.format(**values) + (f" ({line.note})" if line.note else "")


def cells_of(line: Line) -> list[str]:
    """claim, published, measured, predicted, reading: as plain text."""
    c = line.claim
    unit = c.unit
    predicted = fmt(line.predicted, unit) if line.predicted is not None else "no model"
    measured = fmt(line.measured, unit) if line.measured is not None else "-"
    reading = reading_of(line)
    return [f"{c.label} [{unit}]", fmt(c.published, unit), measured, predicted, reading]


HEAD = ["claim", "published", "measured here", "predicted (model)", "reading"]


def text_table(rep: Reproduction) -> str:
    """The table for a terminal: one claim per line pair (numbers, then the reading)."""
    width = max(len(cells_of(x)[0]) for x in rep.lines) if rep.lines else 10
    width = min(width, 72)
    title = f"{rep.post.citation} — published / measured here / predicted by the model"
    head = f"{'claim':<{width}} {'published':>12} {'measured':>12} {'predicted':>12}"
    out = [title, head, "-" * len(head)]
    for line in rep.lines:
        label, published, measured, predicted, reading = cells_of(line)
        out.append(f"{label[:width]:<{width}} {published:>12} {measured:>12} {predicted:>12}")
        out.append(f"  -> {reading}")
    return "\n".join(out)


def markdown(rep: Reproduction) -> str:
    lines = [
        f"## Published claims: {rep.post.citation}",
        "",
        f"The post's experiment: {rep.post.experiment}. Re-run here with "
        f"`just reproduce {rep.post.name}`.",
        "",
        "| " + " | ".join(HEAD) + " |",
        "|---|--:|--:|--:|---|",
    ]
    for line in rep.lines:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells_of(line)) + " |")
    return "\n".join(lines) + "\n"
