"""The report's "Published claims" section: for a run that re-created a post
(`just reproduce POST`), the post's figures beside what the run measured and what the model
predicts, one reading per claim. Empty for every other run."""

from __future__ import annotations

import html
from pathlib import Path

from lab import published
from lab.matrix import MatrixError

ANCHOR = "published"


def _reproduction(run_path: Path) -> published.Reproduction | str | None:
    try:
        return published.from_run(run_path)
    except (MatrixError, LookupError) as exc:  # a hand-edited run.json: say so, keep the rest
        return f"the post's claims in run.json could not be read: {exc}"


def section(run_path: Path) -> str:
    rep = _reproduction(run_path)
    if rep is None:
        return ""
    e = html.escape
    if isinstance(rep, str):
        body = f'<p class="warn">{e(rep)}</p>'
        return f'<section id="{ANCHOR}"><h2>Published claims</h2>{body}</section>'
    head = "".join(f"<th>{e(h)}</th>" for h in published.HEAD)
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in published.cells_of(line)) + "</tr>"
        for line in rep.lines
    )
    intro = (
        f"This run re-created the experiment of {e(rep.post.citation)}: "
        f"{e(rep.post.experiment)}. Each line is one figure the post published, what this "
        "run measured on the same endpoint and load, and what the capacity model predicts "
        "for that cell (<i>no model</i>: the endpoint does no work the model could time). "
        "The reading says why they differ: the machine, the default executor size "
        "min(32, CPUs + 4), the post's client overhead, or an endpoint that did not do what "
        "it said."
    )
    return (
        f'<section id="{ANCHOR}"><h2>Published claims</h2><p class="intro">{intro}</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></section>"
    )


def markdown(run_path: Path) -> str:
    rep = _reproduction(run_path)
    if rep is None:
        return ""
    if isinstance(rep, str):
        return f"## Published claims\n\n{rep}\n"
    return published.markdown(rep)
