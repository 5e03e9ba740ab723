"""Compares two runs cell by cell: the change in throughput and p95 latency, and whether it
exceeds the noise the runs themselves measured (their repetitions' spread)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from lab.results import RunDir

# Without repetitions a run says nothing about its own noise; assume what repeated sleep
# cells show on this kind of machine (their CV stays within a few percent).
ASSUMED_CV = 0.05
NOISE_SIGMAS = 2.0  # a change counts when it exceeds twice the combined noise


@dataclass
class Stats:
    rps: float
    p95: float
    cv: float | None  # coefficient of variation of rps over repetitions; None: one run


def cell_key(cell_id: str) -> str:
    """The cell without its repetition number: what two runs have in common."""
    return cell_id.rsplit("#", 1)[0]


def stats(run: Path) -> dict[str, Stats]:
    groups: dict[str, list[tuple[float, float]]] = {}
    for row in RunDir(run).rows():
        if row["status"] == "ok" and row["rps"]:
            groups.setdefault(cell_key(row["cell"]), []).append(
                (float(row["rps"]), float(row["lat_p95_ms"] or "nan"))
            )
    out = {}
    for key, values in groups.items():
        rps = [v[0] for v in values]
        mean = statistics.fmean(rps)
        cv = statistics.stdev(rps) / mean if len(rps) > 1 and mean else None
        out[key] = Stats(statistics.median(rps), statistics.median(v[1] for v in values), cv)
    return out


def compare(a: Path, b: Path) -> list[dict[str, object]]:
    sa, sb = stats(a), stats(b)
    rows = []
    for key in sorted(sa.keys() | sb.keys()):
        if key not in sa or key not in sb:
            rows.append({"cell": key, "only_in": "A" if key in sa else "B"})
            continue
        x, y = sa[key], sb[key]
        measured = [c for c in (x.cv, y.cv) if c is not None]
        noise = (sum(c * c for c in measured) / len(measured)) ** 0.5 if measured else ASSUMED_CV
        d_rps = (y.rps - x.rps) / x.rps if x.rps else float("nan")
        d_p95 = (y.p95 - x.p95) / x.p95 if x.p95 else float("nan")
        rows.append({
            "cell": key, "rps_a": x.rps, "rps_b": y.rps, "d_rps": d_rps,
            "p95_a": x.p95, "p95_b": y.p95, "d_p95": d_p95, "noise": noise,
            "noise_measured": bool(measured),
            "significant": abs(d_rps) > NOISE_SIGMAS * noise,
        })  # fmt: skip
    return rows


def table(rows: list[dict[str, object]]) -> str:
    head = f"{'cell':<52} {'rps A':>9} {'rps B':>9} {'Δrps':>7} {'Δp95':>7} {'noise':>6}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        if "only_in" in r:
            lines.append(f"{r['cell']:<52} only in run {r['only_in']}")
            continue
        noise = f"{r['noise']:.1%}" + ("" if r["noise_measured"] else "*")
        verdict = "CHANGED" if r["significant"] else "within noise"
        lines.append(
            f"{r['cell']:<52} {r['rps_a']:>9.1f} {r['rps_b']:>9.1f} {r['d_rps']:>+7.1%} "
            f"{r['d_p95']:>+7.1%} {noise:>6}  {verdict}"
        )
    lines.append(
        f"\nnoise = coefficient of variation of rps over the runs' repetitions; "
        f"* = no repetitions, {ASSUMED_CV:.0%} assumed (use --repeat for a measured one). "
        f"CHANGED = |Δrps| > {NOISE_SIGMAS:g} x noise."
    )
    return "\n".join(lines)
