"""The report of one run: reads results/<run>/ (results.csv, run.json, timelines/), folds the
repetitions of each cell together and writes report.html (one self-contained file, charts as
inline SVG), every chart again as a PNG in charts/, and summary.md (the headline table).

    just report [RUN]        (python -m lab report [RUN]) RUN: a run id, 'latest' or a folder

The parts, one job each: sections.py selects the data of each section, templates/ and static/
hold the prose, markup, CSS and JS, html.py renders them, figures.py writes the charts of
lab/report/charts.py as SVG and PNG, summary.py writes summary.md.

To add a section, three pieces:

1. a builder that selects the data, in sections.py or a module of its own; it returns plain
   data (a dataclass, a list of them) or None to leave the section out, and draws its charts
   with `draw(slug, figure)` (a figure from lab/report/charts.py; it returns the Chart to show):

       def posts(run: Run, draw: ChartWriter) -> list[Post] | None: ...

2. templates/sections/<anchor>.html.j2, which gets the builder's value as `data`:

       {% extends "section.html.j2" %}
       {% from "macros.html.j2" import figure, badge %}
       {% block heading %}Published experiments{% endblock %}
       {% block intro %}What the section shows and how to read it.{% endblock %}
       {% block body %}{% for p in data %}...{{ p.rps | num }}...{% endfor %}{% endblock %}

   (filters: num, pct, percent, load_label, verdict_class, capacity, or_dash, as_text;
   macros: figure(chart) with the caption as its body, badge(verdict), kv(dict));

3. one line `Section("<anchor>", builder)` in SECTIONS below, where the page should show it
   (and the anchor in tests/unit/test_report.py's SECTIONS, which checks the page's order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.report import published, pythons, sections
from lab.report.figures import ChartWriter
from lab.report.groups import NOISY_CV, Run, read_run
from lab.report.html import SCRIPT, render
from lab.report.summary import summary_md

__all__ = ["NOISY_CV", "SCRIPT", "SECTIONS", "Section", "build"]


@dataclass(frozen=True)
class Section:
    anchor: str  # <section id>, the nav entry and templates/sections/<anchor>.html.j2
    build: Callable[[Run, ChartWriter], Any]  # the template's `data`; None leaves it out


SECTIONS = [
    Section("published", published.claims),
    Section("headline", sections.results),
    Section("throughput", sections.throughput),
    Section("fit", sections.fit),
    Section("latency", sections.latency),
    Section("efficiency", sections.efficiency),
    Section("sweeps", sections.sweeps),
    Section("canary", sections.canary),
    Section("interpreters", pythons.interpreters),
    Section("repeats", sections.repeats),
    Section("errors", sections.errors),
    Section("timelines", sections.timelines),
    Section("provenance", sections.provenance),
]


def build(run_dir: Path) -> Path:
    """Write report.html, charts/*.png and summary.md into the run folder; returns the HTML."""
    run = read_run(Path(run_dir))
    draw = ChartWriter(run.path / "charts")
    shown = [(s.anchor, data) for s in SECTIONS if (data := s.build(run, draw)) is not None]
    out = run.path / "report.html"
    out.write_text(render(sections.header(run), shown))
    (run.path / "summary.md").write_text(summary_md(run))
    return out
