"""The report document: its sections in order (SECTIONS) and build(), which writes
report.html, charts/*.png and summary.md into the run folder. lab/report/__init__.py says how
to add a section. This module imports matplotlib (through the charts, about 2 s), so it is
loaded when a report is built, not when `lab` parses a command line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.report import database, published, pythons, sections
from lab.report.figures import ChartWriter
from lab.report.groups import GroupedRun, read_grouped
from lab.report.html import render
from lab.report.summary import summary_md


@dataclass(frozen=True)
class Section:
    anchor: str  # <section id>, the nav entry and templates/sections/<anchor>.html.j2
    build: Callable[[GroupedRun, ChartWriter], Any]  # the template's `data`; None leaves it out


SECTIONS = [
    Section("stability", sections.host),
    Section("published", published.claims),
    Section("headline", sections.results),
    Section("throughput", sections.throughput),
    Section("fit", sections.fit),
    Section("latency", sections.latency),
    Section("efficiency", sections.efficiency),
    Section("sweeps", sections.sweeps),
    Section("canary", sections.canary),
    Section("database", database.database),
    Section("interpreters", pythons.interpreters),
    Section("repeats", sections.repeats),
    Section("errors", sections.errors),
    Section("timelines", sections.timelines),
    Section("provenance", sections.provenance),
]


def build(run_dir: Path) -> Path:
    """Write report.html, charts/*.png and summary.md into the run folder; returns the HTML."""
    run = read_grouped(Path(run_dir))
    draw = ChartWriter(run.path / "charts")
    shown = [(s.anchor, data) for s in SECTIONS if (data := s.build(run, draw)) is not None]
    out = run.path / "report.html"
    out.write_text(render(sections.header(run), shown))
    (run.path / "summary.md").write_text(summary_md(run))
    return out
