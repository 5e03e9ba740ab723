"""The report's "Published claims" section: for a run that re-created a post
(`just reproduce POST`), the post's figures beside what the run measured and what the model
predicts, one reading per claim. Left out of every other run's report."""

from __future__ import annotations

from dataclasses import dataclass

from lab.matrix import MatrixError
from lab.report import posts
from lab.report.figures import ChartWriter
from lab.report.groups import GroupedRun


@dataclass(frozen=True)
class Claims:
    citation: str
    experiment: str
    head: list[str]
    rows: list[list[str]]  # claim, published, measured, predicted, reading
    problem: str = ""  # run.json's claims could not be read: say so, keep the rest


def _reproduction(run: GroupedRun) -> posts.Reproduction | str | None:
    try:
        return posts.from_run(run)
    except (MatrixError, LookupError) as exc:  # a hand-edited run.json
        return f"the post's claims in run.json could not be read: {exc}"


def claims(run: GroupedRun, draw: ChartWriter) -> Claims | None:
    rep = _reproduction(run)
    if rep is None:
        return None
    if isinstance(rep, str):
        return Claims("", "", [], [], problem=rep)
    rows = [posts.cells_of(line) for line in rep.lines]
    return Claims(rep.post.citation, rep.post.experiment, list(posts.HEAD), rows)


def markdown(run: GroupedRun) -> str:
    rep = _reproduction(run)
    if rep is None:
        return ""
    if isinstance(rep, str):
        return f"## Published claims\n\n{rep}\n"
    return posts.markdown(rep)
