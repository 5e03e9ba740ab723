"""Chart files: each matplotlib figure of lab.report.charts drawn once as inline SVG (for the
page) and once as charts/<slug>.png (to paste elsewhere). The section builders get a
ChartWriter and call it with a slug and a figure;
the templates place the SVG and write the caption."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup
from matplotlib.figure import Figure

from lab.report import charts


@dataclass(frozen=True)
class Chart:
    slug: str  # the <figure> id (chart-<slug>) and the PNG's name
    svg: Markup  # matplotlib's own SVG, trusted: it escapes the text it draws


class ChartWriter:
    """Renders each figure once as inline SVG and once as charts/<slug>.png."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()

    def __call__(self, slug: str, fig: Figure) -> Chart:
        try:
            svg = charts.to_svg(fig)
            charts.save_png(fig, self.folder / f"{slug}.png")
        finally:
            charts.close(fig)
        return Chart(slug, Markup(svg))
