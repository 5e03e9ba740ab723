"""The page: renders templates/report.html.j2 with Jinja2 (autoescape on: every value from a
run is escaped unless it is marked safe, as the charts' SVG is) and inlines static/report.css
and static/report.js, so report.html is one file that works offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from lab import model
from lab.report import charts
from lab.report.format import FILTERS
from lab.report.groups import NOISY_CV
from lab.report.sections import Header

HERE = Path(__file__).parent
STYLE = (HERE / "static" / "report.css").read_text()
# Counts the charts that really rendered into <body data-rendered>, so a headless browser can
# check the page from outside (tests/unit/test_report.py).
SCRIPT = (HERE / "static" / "report.js").read_text()

environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,  # every template, whatever its name
    undefined=jinja2.StrictUndefined,  # a misspelt field fails the build, not a blank cell
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
environment.filters.update(FILTERS)
# The thresholds the prose quotes, from the code that applies them.
environment.globals.update(
    tolerance=model.TOLERANCE,
    tolerance_max=model.TOLERANCE_MAX,
    loadgen_bound_pct=model.LOADGEN_BOUND_PCT,
    server_bound_pct=model.SERVER_BOUND_PCT,
    min_requests=model.MIN_REQUESTS,
    max_cell_s=model.MAX_CELL_S,
    noisy_cv=NOISY_CV,
    log_span=charts.LOG_SPAN,
)


def render(header: Header, sections: list[tuple[str, Any]]) -> str:
    """The whole page: the header, then each (anchor, data) through sections/<anchor>.html.j2."""
    return environment.get_template("report.html.j2").render(
        header=header, sections=sections, style=STYLE, script=SCRIPT
    )
