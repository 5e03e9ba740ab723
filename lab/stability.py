"""The host's CPU speed, how steady it was over a run, and the tolerance that spread justifies
for a cell's verdict. Pure: lab.proc.cpuspeed measures, the runner records run.json's
`stability`, the report shows it.

A CPU-bound cell is as exact as the CPUs ran at the same speed during its calibration and its
load. Two measurements, never during a load:

  check   before the run, every CPU the run uses busy at once (as under a load) for CHECK_S,
          timed in short chunks: the speed's coefficient of variation over windows of
          0.1, 0.3 and 1 s, the fast noise, which shrinks as windows grow;
  probes  between cells, every CPU busy at once for PROBE_S, at most every PROBE_EVERY_S: the
          speed's spread across the run. What it shows beyond the check's spread over windows
          of PROBE_S is drift (the host slower for minutes, then faster), which no window
          averages away.

The speed over a window of L seconds then varies with a CV of cv(L) = sqrt(fast(L)^2 +
drift^2), fast(L) a power law through the check's points. A calibration of Lc seconds and a
load of Ll seconds disagree about the speed with a spread of sd = sqrt(cv(Lc)^2 + cv(Ll)^2);
a cell whose prediction moves by a share s of any change in CPU speed (model.speed_share: 0
for a wait, 1 for a cell bound by one CPU) is judged at 2 s sd (about 95 % of such
disagreements), never below model.TOLERANCE and never above model.TOLERANCE_MAX. A host whose
1-second CV is at most STEADY_CV is steady: every cell is judged at model.TOLERANCE.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lab import model

CHECK_S = 3.0  # the check before the run (LAB_HOST_CHECK_S: another length, recorded)
CHECK_MIN_S = 0.3  # three 0.1-s windows per CPU at least
PROBE_S = 0.4  # one probe between cells
PROBE_EVERY_S = 45.0  # probes at most this often (0.6 s each: quick's budget is tight)
CHUNK_S = 0.01  # the speed is timed in chunks of about this long
WINDOWS_S = (0.1, 0.3, 1.0)  # the check's window lengths (each needs >= MIN_WINDOWS windows)
MIN_WINDOWS = 4
STEADY_CV = 0.02  # a host this steady over 1 s is judged at ±5 % everywhere (the bar)
SIGMAS = 2.0  # a tolerance of two standard deviations of the speed's disagreement
# Sarle's bimodality coefficient above this (a uniform distribution's 5/9) over the check's
# 0.1-s windows: the speed switches between levels rather than wobbling around one.
BIMODAL_BC = 5 / 9
MIN_BIMODAL_SAMPLES = 20


def check_seconds() -> float:
    """How long the check before the run lasts: CHECK_S, or LAB_HOST_CHECK_S where it is a
    number of at least CHECK_MIN_S (the tests' runs: a short one; run.json records it)."""
    raw = os.environ.get("LAB_HOST_CHECK_S", "")
    try:
        value = float(raw)
    except ValueError:
        return CHECK_S
    return value if math.isfinite(value) and value >= CHECK_MIN_S else CHECK_S


@dataclass(frozen=True)
class Chunk:
    """A stretch of the reference loop on one CPU: it ended `end` seconds after the start
    (a clock shared by every CPU's loop), took `seconds` and ran `steps` iterations."""

    cpu: int
    end: float
    seconds: float
    steps: int


def window_rates(chunks: Sequence[Chunk], length: float) -> dict[int, list[float]]:
    """Per CPU, its speed (steps per second) over consecutive windows of `length` seconds."""
    out: dict[int, list[float]] = {}
    for cpu in sorted({c.cpu for c in chunks}):
        mine = sorted((c for c in chunks if c.cpu == cpu), key=lambda c: c.end)
        rates: list[float] = []
        steps, seconds, edge = 0, 0.0, length
        start = mine[0].end - mine[0].seconds if mine else 0.0
        for c in mine:
            steps += c.steps
            seconds += c.seconds
            if c.end - start >= edge - 1e-9:
                rates.append(steps / seconds)
                steps, seconds, edge = 0, 0.0, edge + length
        out[cpu] = rates
    return out


def pooled_cv(groups: dict[int, list[float]]) -> tuple[float | None, int]:
    """The CV of values pooled over groups, each scaled by its own mean (CPUs differ in speed;
    what matters is each one's change); and how many values there were."""
    scaled = [v / statistics.fmean(g) for g in groups.values() if len(g) >= 1 for v in g]
    if len(scaled) < 2:
        return None, len(scaled)
    return statistics.stdev(scaled) / statistics.fmean(scaled), len(scaled)


def bimodality(values: Sequence[float]) -> float | None:
    """Sarle's bimodality coefficient (skewness^2 + 1) / kurtosis, sample-corrected; None
    for fewer than MIN_BIMODAL_SAMPLES values."""
    n = len(values)
    if n < MIN_BIMODAL_SAMPLES:
        return None
    mean = statistics.fmean(values)
    m2 = sum((v - mean) ** 2 for v in values) / n
    if m2 <= 0:
        return 0.0
    m3 = sum((v - mean) ** 3 for v in values) / n
    m4 = sum((v - mean) ** 4 for v in values) / n
    g = m3 / m2**1.5
    excess = m4 / m2**2 - 3
    return (g * g + 1) / (excess + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def check_record(chunks: Sequence[Chunk], at: str) -> dict[str, Any]:
    """run.json's stability `check` from the chunks of the check before the run."""
    span = max((c.end for c in chunks), default=0.0)
    cv: dict[str, float] = {}
    for length in WINDOWS_S:
        value, count = pooled_cv(window_rates(chunks, length))
        if value is not None and count >= MIN_WINDOWS:
            cv[f"{length:g}"] = round(value, 5)
    short = window_rates(chunks, WINDOWS_S[0])
    scaled = [v / statistics.fmean(g) for g in short.values() if g for v in g]
    bc = bimodality(scaled)
    return {
        "at": at,
        "seconds": round(span, 3),
        "cv": cv,
        "bimodality": None if bc is None else round(bc, 3),
        "rates": {str(cpu): round(statistics.fmean(r)) for cpu, r in short.items() if r},
    }


def probe_value(chunks: Sequence[Chunk], t: float, check: dict[str, Any]) -> list[list[float]]:
    """One probe's rows [t, cpu, speed relative to that CPU's speed in the check]."""
    rows = []
    rates = check.get("rates") or {}
    for cpu in sorted({c.cpu for c in chunks}):
        mine = [c for c in chunks if c.cpu == cpu]
        seconds = sum(c.seconds for c in mine)
        reference = rates.get(str(cpu))
        if seconds > 0 and reference:
            rows.append(
                [round(t, 1), cpu, round(sum(c.steps for c in mine) / seconds / reference, 4)]
            )
    return rows


def fast_cv(check: dict[str, Any], length: float) -> float:
    """The check's CV at `length` seconds: a power law through its points (log-log least
    squares, the exponent between -0.5, white noise, and 0, noise that never averages out),
    flat beyond them at one point."""
    points = [
        (math.log(float(k)), math.log(v)) for k, v in (check.get("cv") or {}).items() if v > 0
    ]
    if not points:
        return 0.0
    if len(points) == 1:
        return math.exp(points[0][1])
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    slope = min(0.0, max(-0.5, slope))
    return math.exp(my + slope * (math.log(length) - mx))


def summarize(check: dict[str, Any], probes: list[list[float]], cpus: list[int]) -> dict[str, Any]:
    """run.json's `stability`: the check, the probes so far, and the headline figures."""
    groups: dict[int, list[float]] = {}
    for _, cpu, value in probes:
        groups.setdefault(int(cpu), []).append(value)
    probe_cv, count = pooled_cv(groups)
    values = [v for _, _, v in probes]
    drift = 0.0
    if probe_cv is not None and count >= MIN_WINDOWS:
        drift = math.sqrt(max(0.0, probe_cv**2 - fast_cv(check, PROBE_S) ** 2))
    stability = {
        "cpus": cpus,
        "check": check,
        "probes": {
            "seconds": PROBE_S,
            "count": len({t for t, _, _ in probes}),
            "cv": None if probe_cv is None else round(probe_cv, 5),
            "range": [round(min(values), 4), round(max(values), 4)] if values else None,
            "values": probes,
        },
        "drift": round(drift, 5),
    }
    cv_1s = cv_at(stability, 1.0)
    bc = check.get("bimodality")
    stability["bimodal"] = bc is not None and bc > BIMODAL_BC
    stability["cv_1s"] = round(cv_1s, 5)
    stability["steady"] = cv_1s <= STEADY_CV
    stability["warning"] = warning(stability)
    return stability


def cv_at(stability: dict[str, Any], length: float) -> float:
    """The speed's CV over a window of `length` seconds: the check's fast noise and the drift."""
    fast = fast_cv(stability.get("check") or {}, length)
    return math.sqrt(fast**2 + float(stability.get("drift") or 0.0) ** 2)


def warning(stability: dict[str, Any]) -> str:
    """One plain sentence when the host is too noisy for ±5 % everywhere ('' when not)."""
    if stability.get("steady"):
        return ""
    cv = float(stability.get("cv_1s") or 0.0)
    text = (
        f"this host's CPU speed varied by {cv:.1%} (CV over 1 s windows; steady is "
        f"<= {STEADY_CV:.0%}): cells bound by a CPU are judged at up to "
        f"±{model.TOLERANCE_MAX:.0%}, waits at ±{model.TOLERANCE:.0%}"
    )
    if stability.get("bimodal"):
        text += "; its speed switched between levels (bimodal)"
    return text


def describe(stability: dict[str, Any] | None) -> str:
    """One line for people: how steady the host was."""
    if not stability:
        return "host stability: not measured"
    probes = stability.get("probes") or {}
    text = (
        f"host stability: CPU speed CV {float(stability.get('cv_1s') or 0):.1%} over 1 s "
        f"(check {fmt_cvs(stability.get('check') or {})}"
    )
    if probes.get("count"):
        low, high = probes.get("range") or (1.0, 1.0)
        text += (
            f"; {probes['count']} probes between cells: {low:.2f}–{high:.2f} of the check's "
            f"speed, drift {float(stability.get('drift') or 0):.1%}"
        )
    text += ")" + (" — steady" if stability.get("steady") else "")
    if stability.get("warning"):
        text += f" — warning: {stability['warning']}"
    return text


def fmt_cvs(check: dict[str, Any]) -> str:
    cvs = check.get("cv") or {}
    return ", ".join(f"{v:.1%} over {k} s" for k, v in cvs.items()) or "no windows"


def loadgen_sd(spread: float | None, readings: int) -> float:
    """How far a k6-bound cell's rate may stray from k6's reference by k6's own noise: the
    spread of its readings (a CV) for the load's k6, and that over sqrt(readings) for their
    median. A longer load does not shrink it: 6-s references spread as far as 2-s ones."""
    if not spread or readings < 2:
        return 0.0
    return spread * math.sqrt(1.0 + 1.0 / readings)


def tolerance(
    stability: dict[str, Any] | None,
    share: float,
    calibration_s: float,
    load_s: float,
    k6_sd: float = 0.0,
) -> tuple[float, str]:
    """A cell's tolerance and why: model.TOLERANCE for a wait or on a steady host; for a cell
    whose prediction moves by `share` of a change in CPU speed, SIGMAS x share x the spread
    between a calibration of calibration_s and a load of load_s seconds, within
    [TOLERANCE, TOLERANCE_MAX]. k6_sd: for a cell bound on the load side, k6's own noise
    (loadgen_sd), which the CPU-speed check does not see (ten k6 references read CV 8.7 %
    where the check read 1.2 %): the larger of the two spreads applies, steady host or not."""
    base = model.TOLERANCE
    if SIGMAS * share * k6_sd <= base:  # k6's own noise widens nothing
        if not stability:
            return base, f"±{base:.0%}: the host's stability was not measured"
        if stability.get("steady"):
            cv = float(stability.get("cv_1s") or 0.0)
            return base, f"±{base:.0%}: a steady host (CPU speed CV {cv:.1%} over 1 s)"
        if share < 0.05:
            return base, f"±{base:.0%}: a wait (the prediction does not ride on CPU speed)"
    speed_sd = 0.0
    if stability and not stability.get("steady"):
        speed_sd = math.hypot(cv_at(stability, calibration_s), cv_at(stability, load_s))
    sd = max(speed_sd, k6_sd)
    raw = SIGMAS * share * sd
    # rounded as the row keeps it, so that the why says the row's figure (0.07497 is ±7 %,
    # the row's 0.075 ±8 %)
    tol = round(min(model.TOLERANCE_MAX, max(base, raw)), 4)
    if sd == speed_sd:
        why = (
            f"±{tol:.0%}: {share:.0%} CPU-bound, the host's speed varies {sd:.1%} between a "
            f"{calibration_s:g} s calibration and a {load_s:g} s load ({SIGMAS:g} sd)"
        )
    else:
        why = (
            f"±{tol:.0%}: {share:.0%} CPU-bound, k6's own rate varies {sd:.1%} between its "
            f"reference and a load (its reference runs' spread; {SIGMAS:g} sd)"
        )
    if raw > model.TOLERANCE_MAX:
        why += f", capped at {model.TOLERANCE_MAX:.0%}"
    return tol, why
