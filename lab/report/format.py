"""How the report writes numbers and loads: the Jinja filters of the HTML page, also used by the
markdown summary, so both show the same digits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

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


def num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def plain(value: float | None, digits: int = 1) -> str:
    """num() without thousands separators (markdown tables, machine-friendly)."""
    return num(value, digits).replace(",", "")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def percent(value: float) -> str:
    """A ratio as a whole percentage: 0.1 -> '10%'."""
    return f"{value:.0%}"


def tolerance(value: float | None) -> str:
    """A verdict's tolerance as a share either way: 0.05 -> '±5 %', 0.0734 -> '±7.3 %'."""
    if value is None:
        return "-"
    return f"±{round(value * 100, 1):g} %"


def judged_at(tol: float | None, allowed: float) -> str:
    """A cell's tolerance, and what its repeats' confidence interval widened it to."""
    text = tolerance(tol)
    if tol is None or round(allowed, 3) <= round(tol, 3):
        return text
    return f"{text} → {tolerance(allowed)}"


def interval(bounds: tuple[float, float] | None, write: Callable[[float], str] = num) -> str:
    """A 95 % confidence interval of rps, low to high ('-' without repeats)."""
    return "-" if bounds is None else f"{write(max(0.0, bounds[0]))}–{write(bounds[1])}"


def load_label(load: tuple[int, int]) -> str:
    rate, vus = load
    users = f"{vus} VU" + ("" if vus == 1 else "s")
    return f"{rate} req/s (open model, up to {users})" if rate else users


def load_slug(load: tuple[int, int]) -> str:
    rate, vus = load
    return f"rate{rate}-vus{vus}" if rate else f"vus{vus}"


def verdict_class(verdict: str) -> str:
    return VERDICT_CLASS.get(verdict, "nomodel")


def matrix_load(matrix: dict[str, Any]) -> str:
    """The load a matrix puts on each cell, in one line."""
    if matrix.get("cells"):  # a post's explicit cells, each with its own load
        return (
            f"{len(matrix['cells'])} explicit cells, each with its own VUs (and requests per "
            f"VU); {matrix.get('duration', '-')} per cell at most; "
            f"{matrix.get('repeat', 1)} repeat(s)"
        )
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
    skipped = matrix.get("not_run") or []
    if skipped:  # distinct_capacities: the cells another endpoint of their profile answers
        parts.append(
            f"not run, as another endpoint of their profile has the same capacity: "
            f"{', '.join(skipped)}"
        )
    return "; ".join(parts)


def as_text(value: Any) -> str:
    """A run.json value for a key/value table: strings as they are, the rest as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def or_dash(value: Any) -> Any:
    """'-' for a value a run did not record (None: e.g. no threads knob)."""
    return "-" if value is None else value


def capacity(value: Any) -> str:
    """A server's per-endpoint capacity from its /info ('∞' = unbounded)."""
    if not isinstance(value, dict):
        return "-"
    return ", ".join(f"{k}={'∞' if v is None else v}" for k, v in value.items())


FILTERS = {
    "num": num,
    "pct": pct,
    "percent": percent,
    "tolerance": tolerance,
    "interval": interval,
    "judged_at": judged_at,
    "load_label": load_label,
    "verdict_class": verdict_class,
    "matrix_load": matrix_load,
    "as_text": as_text,
    "capacity": capacity,
    "or_dash": or_dash,
}
