"""summary.md: the report's headline table as markdown, one line per cell (repeats folded to
their median), with the same digits as the HTML page."""

from __future__ import annotations

from lab import model, stability
from lab.report.database import markdown as database_md
from lab.report.format import interval, judged_at, plain, tolerance
from lab.report.groups import GroupedRun
from lab.report.published import markdown as claims_md
from lab.report.pythons import interpreters_md

TEXT_COLUMNS = ("target", "profile", "endpoint", "params", "verdict", "bound")


def summary_md(run: GroupedRun) -> str:
    meta = run.meta
    matrix = (meta.matrix or {}).get("name", "-")
    run_id = run.path.name if meta.run_id is None else meta.run_id
    status = "unknown" if meta.status is None else meta.status
    commit = "-" if meta.git_commit is None else meta.git_commit
    lines = [
        f"# Run {run_id}",
        "",
        f"Status: {status}; matrix: {matrix}; commit "
        f"{commit[:12]}; {len(run.rows)} cells measured. "
        "Repeated cells are aggregated as the median over their repeats; efficiency = "
        "measured / predicted rps; 'as predicted' = within the cell's tolerance (column "
        f"'tolerance': {tolerance(model.TOLERANCE)} for a wait, wider as far as the prediction "
        "rides on CPU speed the host's stability check saw vary); with repeats, the 95 % "
        "confidence interval of their mean (Student's t) widens it ('→'), to "
        f"{tolerance(model.TOLERANCE_MAX)} at most.",
        "",
        stability.describe(meta.stability) + ("" if meta.stability else " (an older run)"),
        "",
    ]
    rated = any(g.first.rate for g in run.groups)
    head = ["target", "profile", "endpoint", "params", "VUs", *(["rate"] if rated else []),
            "repeats", "rps", "rps 95 % CI", "p95 ms", "predicted rps", "efficiency",
            "tolerance", "verdict", "bound"]  # fmt: skip
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" if h in TEXT_COLUMNS else "--:" for h in head) + "|")
    for g in run.groups:
        r = g.first
        cells = [r.target, r.profile, r.endpoint, r.params or "-", str(r.vus or "-"),
                 *([str(r.rate or "-")] if rated else []), str(len(g.ok)),
                 plain(g.rps), interval(g.rps_interval, plain), plain(g.stat("lat_p95_ms")),
                 plain(g.stat("predicted_rps")), plain(g.efficiency, 2),
                 judged_at(g.tolerance if g.ok else None, g.allowed),
                 g.verdict + (" (noisy)" if g.noisy else ""),
                 g.bound or "-"]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if not run.groups:
        lines.append("\n(no cell has been measured yet)")
    lines.extend(interpreters_md(run))
    db = database_md(run)
    if db:
        lines.extend(["", db])
    claims = claims_md(run)
    return "\n".join(lines) + "\n" + (f"\n{claims}" if claims else "")
