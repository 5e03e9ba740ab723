"""A run read back (lab.rundir.read_run) with the repetitions of each cell folded into
groups (median, CV): what the report and `lab compare` read."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lab import model
from lab.contract import load as load_contract
from lab.matrix import python_of, python_suffix
from lab.record import CellResult, RunMeta
from lab.rundir import Run, read_run

# Repeats of one cell whose throughput varies more than this (coefficient of variation: the
# sample standard deviation of their rps over its mean) are flagged noisy. Back-to-back runs on
# an idle machine agree within 1-3 %; 5 % means something else shared the machine (another
# process, CPU frequency, a noisy neighbour VM), so a difference smaller than that between two
# targets is not a result.
NOISY_CV = 0.05

# Student's t for a two-sided 95 % interval, by degrees of freedom (repeats - 1); beyond the
# table the normal quantile (1.96; t at 40 degrees is 2.02). scipy is not a dependency for
# thirty numbers: tests/unit/test_report.py integrates the t density to check them.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
       2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
       2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with df degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"t95: {df} degrees of freedom")
    return T95[df - 1] if df <= len(T95) else statistics.NormalDist().inv_cdf(0.975)


def confidence(values: list[float]) -> tuple[float, float] | None:
    """The mean of repeated measurements and the half-width of its 95 % confidence interval
    (Student's t: t * s / sqrt(n)); None for fewer than two."""
    if len(values) < 2:
        return None
    half = t95(len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return statistics.fmean(values), half


# --- rows and groups --------------------------------------------------------------------------

Row = CellResult  # one CSV row (one measured cell), typed by lab/record.py


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@dataclass
class Group:
    """The repeats of one cell (same target, profile, endpoint, params, VUs and rate)."""

    key: str
    rows: list[Row] = field(default_factory=list)

    @property
    def first(self) -> Row:
        return self.rows[0]

    @property
    def ok(self) -> list[Row]:
        return [r for r in self.rows if r.status == "ok" and r.rps is not None]

    @property
    def series(self) -> str:
        """target/profile, with the interpreter when the cell names one (+py3.13)."""
        python = python_suffix(python_of(self.first.cell))
        return f"{self.first.target}/{self.first.profile}{python}"

    @property
    def load(self) -> tuple[int, int]:
        return (self.first.rate or 0, self.first.vus or 0)

    def _med(self, get: Callable[[Row], float | None]) -> float | None:
        return _median(get(r) for r in self.ok)

    @property
    def rps(self) -> float | None:
        return self._med(lambda r: r.rps)

    @property
    def rps_values(self) -> list[float]:
        return [r.rps for r in self.ok if r.rps is not None]

    @property
    def cv(self) -> float | None:
        """Coefficient of variation of rps over the repeats (sample stdev / mean)."""
        values = self.rps_values
        if len(values) < 2 or statistics.mean(values) <= 0:
            return None
        return statistics.stdev(values) / statistics.mean(values)

    @property
    def noisy(self) -> bool:
        return self.cv is not None and self.cv > NOISY_CV

    @property
    def efficiency(self) -> float | None:
        return self._med(lambda r: r.efficiency)

    @property
    def loadgen_bound(self) -> bool:
        """The model predicts the load side (k6, or the upstream or the database on its CPUs)
        as the limit."""
        return self.bound in model.LOAD_SIDE

    @property
    def bound(self) -> str:
        """The limiting resource the model names most often over the repeats."""
        names = [r.bound for r in self.ok if r.bound]
        return max(set(names), key=names.count) if names else ""

    @property
    def censored(self) -> str:
        return next((r.censored for r in self.ok if r.censored), "")

    @property
    def rps_interval(self) -> tuple[float, float] | None:
        """The 95 % confidence interval (low, high) of the mean rps over the repeats."""
        ci = confidence(self.rps_values)
        return None if ci is None else (ci[0] - ci[1], ci[0] + ci[1])

    @property
    def efficiency_interval(self) -> tuple[float, float] | None:
        """The repeats' mean efficiency and the half-width of its 95 % confidence interval
        (each repeat against its own prediction)."""
        return confidence([r.efficiency for r in self.ok if r.efficiency is not None])

    @property
    def tolerance(self) -> float:
        """The median repeat's tolerance (model.TOLERANCE for rows written before rows
        carried one)."""
        return self._med(lambda r: r.tolerance) or model.TOLERANCE

    @property
    def tolerance_why(self) -> str:
        """Why that tolerance: the reason of the repeat whose tolerance is nearest it."""
        rows = [r for r in self.ok if r.tolerance is not None and r.tolerance_why]
        near = min(rows, key=lambda r: abs((r.tolerance or 0.0) - self.tolerance), default=None)
        return "" if near is None else near.tolerance_why

    @property
    def judged(self) -> tuple[float | None, float | None]:
        """What the verdict judges: the efficiency and the half-width of its 95 % confidence
        interval (with repeats, their mean and its interval; else the one measurement)."""
        ci = self.efficiency_interval
        return (self.efficiency, None) if ci is None else ci

    @property
    def allowed(self) -> float:
        """The share of the prediction the cell may miss by: its tolerance, widened by its
        repeats' interval (lab.model.allowed)."""
        return model.allowed(self.tolerance, self.judged[1])

    @property
    def verdict(self) -> str:
        """Judged by the one verdict function (lab.model.verdict) at the cell's tolerance."""
        if not self.ok:
            return "error"
        efficiency, interval = self.judged
        return model.verdict("ok", efficiency, self.censored, self.tolerance, interval)

    def stat(self, name: str) -> float | None:
        return self._med(lambda r: getattr(r, name))


def _endpoint_order() -> list[str]:
    try:
        return load_contract().names()
    except (OSError, ValueError, KeyError):
        return []  # the report still works, in the order the CSV has


def group(rows: list[Row], meta: RunMeta) -> list[Group]:
    """Rows folded by cell, ordered as the matrix lists targets and the contract endpoints."""
    groups: dict[str, Group] = {}
    for r in rows:
        groups.setdefault(r.key, Group(r.key)).rows.append(r)
    cells = [c for c in meta.cells or [] if isinstance(c, dict)]
    planned = [f"{c.get('target')}/{c.get('profile')}" for c in cells]
    series = list(dict.fromkeys([*planned, *(g.series for g in groups.values())]))
    endpoints = list(dict.fromkeys([*_endpoint_order(), *(r.endpoint for r in rows)]))
    for g in groups.values():
        g.rows.sort(key=lambda r: r.repeat)
    return sorted(
        groups.values(),
        key=lambda g: (
            series.index(g.series),
            endpoints.index(g.first.endpoint),
            g.first.params,
            g.load,
        ),
    )


@dataclass
class GroupedRun(Run):
    """A run read back, and its rows folded into groups in the report's order."""

    groups: list[Group] = field(default_factory=list)


def read_grouped(path: Path) -> GroupedRun:
    run = read_run(path)
    groups = group(run.rows, run.meta)
    return GroupedRun(run.path, run.meta, run.rows, run.timelines, run.problems, groups)
