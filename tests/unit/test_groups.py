"""lab/report/groups.py: a cell's repeats folded into one group, judged at the median repeat's
tolerance, with repeats by the 95 % confidence interval of their mean (Student's t)."""

from __future__ import annotations

import math

import pytest

from lab import model
from lab.record import CellResult
from lab.report.groups import T95, Group, confidence, t95

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def row(repeat: int, rps: float, predicted: float = 100.0, **more: object) -> CellResult:
    return CellResult(
        cell=f"gin/release/cpu?n=1000@vus=50#{repeat}", status="ok", repeat=repeat, rps=rps,
        predicted_rps=predicted, efficiency=rps / predicted, bound="server-cpu", **more,
    )  # type: ignore[arg-type]  # fmt: skip


def group(*rows: CellResult) -> Group:
    return Group(rows[0].key, list(rows))


def t_coverage(t: float, df: int, steps: int = 20000) -> float:
    """P(-t < T < t) for Student's t with df degrees of freedom (Simpson's rule on its
    density): the table is checked against the distribution, not against itself."""
    norm = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))

    def pdf(x: float) -> float:
        return norm * (1 + x * x / df) ** (-(df + 1) / 2)

    h = t / steps
    total = pdf(0) + pdf(t) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, steps))
    return 2 * total * h / 3


@pytest.mark.parametrize("df", range(1, len(T95) + 1))
def test_the_t_table_is_students_95_percent(df: int) -> None:
    assert t_coverage(t95(df), df) == pytest.approx(0.95, abs=2e-4)


def test_t_beyond_the_table_is_the_normal_quantile() -> None:
    assert t95(31) == pytest.approx(1.95996, abs=1e-4)
    with pytest.raises(ValueError):
        t95(0)


def test_confidence_is_mean_plus_minus_t_s_over_root_n() -> None:
    assert confidence([100.0]) is None
    mean, half = confidence([90.0, 100.0, 110.0]) or (0.0, 0.0)
    assert mean == 100.0
    assert half == pytest.approx(4.303 * 10.0 / math.sqrt(3))


def test_repeats_whose_interval_overlaps_the_band_are_as_predicted() -> None:
    # efficiencies 0.89, 0.91, 0.93: mean 0.91, s 0.02, half-width 4.303 * 0.02 / sqrt(3)
    # = 0.0497; 0.91 + 0.0497 = 0.9597 overlaps the ±5 % band
    repeated = group(row(1, 89.0), row(2, 91.0), row(3, 93.0))
    assert repeated.efficiency == pytest.approx(0.91)
    low, high = repeated.rps_interval or (0.0, 0.0)
    assert (low, high) == pytest.approx((91.0 - 4.9687, 91.0 + 4.9687), abs=1e-3)
    assert repeated.verdict == "as predicted"
    # the same median measured once is not
    assert group(row(1, 91.0)).verdict == "below model"
    # nor are repeats that agree closely about the same mean
    assert group(row(1, 90.9), row(2, 91.0), row(3, 91.1)).verdict == "below model"
    # nor a spread that just misses: 0.90 + 0.0497 = 0.9497
    assert group(row(1, 88.0), row(2, 90.0), row(3, 92.0)).verdict == "below model"


def test_an_interval_widens_the_verdict_to_fifteen_percent_at_most() -> None:
    # 0.70 and 1.00: mean 0.85, half-width 12.706 * 0.212 / sqrt(2) = 1.9 (two repeats that
    # disagree say nothing), yet a cell at 0.85 is not judged wider than ±15 %
    wild = group(row(1, 70.0), row(2, 100.0))
    assert (wild.efficiency_interval or (0.0, 0.0))[1] > 1.0
    assert wild.verdict == "as predicted"  # 0.85: on the 15 % edge
    assert group(row(1, 68.0), row(2, 100.0)).verdict == "below model"  # 0.84
    assert model.TOLERANCE_MAX == 0.15


def test_the_group_is_judged_at_its_median_repeats_tolerance() -> None:
    why = "±9%: 100% CPU-bound, the host's speed varies 4.5% between ..."
    noisy = group(
        row(1, 92.0, tolerance=0.09, tolerance_why=why),
        row(2, 92.0, tolerance=0.09, tolerance_why=why),
        row(3, 92.0, tolerance=0.12, tolerance_why="±12%: ..."),
    )
    assert noisy.tolerance == 0.09 and noisy.tolerance_why == why
    assert noisy.verdict == "as predicted"  # 0.92 within ±9 %, with no spread at all
    older = group(row(1, 92.0))  # a row written before rows carried a tolerance
    assert older.tolerance == model.TOLERANCE and older.tolerance_why == ""
    assert older.verdict == "below model"
