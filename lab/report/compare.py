"""Compares two runs cell by cell: the change in throughput and p95 latency, and whether it
exceeds the noise the runs themselves measured (their repetitions' spread). `lab compare RUN_A
RUN_B` (`just compare`) is at the end of this file."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.arguments import add_command
from lab.errors import UsageError
from lab.report.groups import NOISY_CV, Group, read_grouped
from lab.rundir import resolve

# Without repetitions a run says nothing about its own noise; assume the level above which
# repeated cells count as noisy.
ASSUMED_CV = NOISY_CV
NOISE_SIGMAS = 2.0  # a change counts when it exceeds twice the combined noise


def stats(run: Path) -> dict[str, Group]:
    """The run's cells that have a measurement, by id without the #repeat suffix."""
    return {g.key: g for g in read_grouped(run).groups if g.ok}


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
        rps_a, rps_b = x.rps or 0.0, y.rps or 0.0
        p95_a, p95_b = x.stat("lat_p95_ms") or float("nan"), y.stat("lat_p95_ms") or float("nan")
        d_rps = (rps_b - rps_a) / rps_a if rps_a else float("nan")
        d_p95 = (p95_b - p95_a) / p95_a if p95_a else float("nan")
        rows.append({
            "cell": key, "rps_a": rps_a, "rps_b": rps_b, "d_rps": d_rps,
            "p95_a": p95_a, "p95_b": p95_b, "d_p95": d_p95, "noise": noise,
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


def cmd_compare(args: argparse.Namespace) -> int:
    """Per cell: the change in rps and p95 from RUN_A to RUN_B, and whether it exceeds the
    noise (repetitions' CV) measured in those runs."""
    try:
        a, b = (resolve(r) for r in (args.run_a, args.run_b))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(table(compare(a, b)))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(sub, "compare", cmd_compare, "compare two runs cell by cell")
    p.add_argument("run_a", help="run id under results/, 'latest', or a path")
    p.add_argument("run_b", help="run id under results/, 'latest', or a path")
