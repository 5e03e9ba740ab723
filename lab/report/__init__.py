"""The report of one run: reads results/<run>/ (results.csv, run.json, timelines/), folds the
repetitions of each cell together and writes report.html (one self-contained file, charts as
inline SVG), every chart again as a PNG in charts/, and summary.md (the headline table).

    just report [RUN]        (python -m lab report [RUN]) RUN: a run id, 'latest' or a folder

The parts, one job each: document.py lists the sections in order and builds the report
(build() below loads it on first use, as it imports matplotlib), sections.py selects the data
of each section, templates/ and static/ hold the prose, markup, CSS and JS, html.py renders
them, figures.py writes the charts of lab/report/charts.py as SVG and PNG, summary.py writes
summary.md; groups.py folds the repeats of each cell of the run that lab.rundir reads
back. `lab report` (its parser and function) is at the end of this file.

To add a section, three pieces:

1. a builder that selects the data, in sections.py or a module of its own; it returns plain
   data (a dataclass, a list of them) or None to leave the section out, and draws its charts
   with `draw(slug, figure)` (a figure from lab/report/charts.py; it returns the Chart to show):

       def posts(run: GroupedRun, draw: ChartWriter) -> list[Post] | None: ...

2. templates/sections/<anchor>.html.j2, which gets the builder's value as `data`:

       {% extends "section.html.j2" %}
       {% from "macros.html.j2" import figure, badge %}
       {% block heading %}Published experiments{% endblock %}
       {% block intro %}What the section shows and how to read it.{% endblock %}
       {% block body %}{% for p in data %}...{{ p.rps | num }}...{% endfor %}{% endblock %}

   (filters: num, pct, percent, tolerance, interval, judged_at, load_label, verdict_class,
   capacity, or_dash, as_text;
   macros: figure(chart) with the caption as its body, badge(verdict), kv(dict));

3. one line `Section("<anchor>", builder)` in SECTIONS in document.py, where the page should
   show it (and the anchor in tests/unit/test_report.py's SECTIONS, which checks the page's order).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.arguments import add_command
from lab.errors import UsageError
from lab.rundir import RunDir, resolve


def build(run_dir: Path) -> Path:
    """Write report.html, charts/*.png and summary.md into the run folder; returns the HTML.
    document.py is imported here, on first use: every `lab` command imports this package (for
    the parsers of report, compare and reproduce), and document.py brings matplotlib."""
    from lab.report import document

    return document.build(run_dir)


def cmd_report(args: argparse.Namespace) -> int:
    """Write report.html (one self-contained file that works offline), charts/*.png and
    summary.md into a run folder. bench-all does this at its end."""
    try:
        path = resolve(args.run_id)
        RunDir(path).mark_if_died()  # a `running` run whose runner is gone says `died`
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(f"{args.run_id}: run.json is not readable ({exc})") from None
    out = build(path)
    print(f"report: {out}\nsummary: {path / 'summary.md'}\ncharts: {path / 'charts'}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(sub, "report", cmd_report, "write a run's report.html, charts and summary.md")
    p.add_argument(
        "run_id", nargs="?", default="latest", metavar="RUN", help="run id, 'latest', or a path"
    )
