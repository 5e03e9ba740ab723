"""lab/report/charts.py's predicted-vs-measured chart: each cell's tolerance band and
confidence interval drawn, and the names of the cells off the model placed so that no two
overlap (place_labels, and the chart it lays out)."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.collections import LineCollection

from lab.report import charts
from lab.report.charts import Box, Point, place_labels

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

FRAME = Box(0.0, 0.0, 600.0, 500.0)


def test_a_cluster_of_labels_stacks_without_overlapping() -> None:
    # twelve points within 6 pixels of each other (the 300-500 rps cluster of a quick run)
    anchors = [(300.0 + i % 3 * 2, 250.0 + i // 3 * 2) for i in range(12)]
    sizes = [(90.0 + i * 3, 9.0) for i in range(12)]
    markers = [Box(x - 4, y - 4, x + 4, y + 4) for x, y in anchors]
    boxes = place_labels(anchors, sizes, FRAME, markers)
    assert len(boxes) == 12
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    for box, (x, y), (w, h) in zip(boxes, anchors, sizes, strict=True):
        assert box.inside(FRAME)
        assert not any(box.overlaps(m) for m in markers)
        assert (box.x1 - box.x0, box.y1 - box.y0) == pytest.approx((w, h))
        assert abs((box.y0 + box.y1) / 2 - y) <= 7 * h  # near its point, not anywhere
        gap = charts.LABEL_GAP
        assert box.x0 == pytest.approx(x + gap) or box.x1 == pytest.approx(x - gap)


def test_a_lone_label_sits_right_of_its_point_and_left_at_the_edge() -> None:
    (box,) = place_labels([(100.0, 100.0)], [(50.0, 9.0)], FRAME)
    assert (box.x0, box.y0) == (100.0 + charts.LABEL_GAP, 95.5)
    (edge,) = place_labels([(590.0, 100.0)], [(50.0, 9.0)], FRAME)
    assert edge.x1 == 590.0 - charts.LABEL_GAP and edge.inside(FRAME)


def test_boxes_overlap_only_when_they_share_area() -> None:
    a = Box(0, 0, 10, 10)
    assert a.overlaps(Box(5, 5, 15, 15))
    assert not a.overlaps(Box(10, 0, 20, 10))  # touching edges is not overlapping
    assert not a.overlaps(Box(0, 11, 10, 20))


def cluster() -> list[Point]:
    """A quick run's /hello cells: ten near 15,000 rps, all named (off the model), and three
    judged cells, one with repeats."""
    names = ["gin/release", "nethttp/release", "aiohttp/aiohttp", "starlette/uvicorn",
             "fastify/node", "litestar/uvicorn", "jdkhttp/virtual", "spring/mvc",
             "fastapi/uvicorn", "quart/hypercorn"]  # fmt: skip
    off = [
        Point(f"{n} hello", 14000 + 300 * i, 15500 + 600 * (i % 4), "loadgen", 0.05, None, False)
        for i, n in enumerate(names)
    ]
    return [
        *off,
        Point("gin/release sync", 480.0, 470.0, "vus", 0.05),
        Point("gin/release cpu", 900.0, 880.0, "server-cpu", 0.12, (850.0, 930.0)),
        Point("flask/gunicorn sync", 8.0, 5.0, "slots", 0.05, (4.0, 6.5), False),
    ]


def test_the_chart_names_every_miss_and_no_two_names_overlap() -> None:
    points = cluster()
    fig = charts.predicted_vs_measured(points, "fit")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    named = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    frame = ax.get_window_extent(renderer)
    charts.close(fig)
    assert set(named) == {p.label for p in points if not p.judged}
    for (a, ea), (b, eb) in itertools.combinations(named.items(), 2):
        assert not ea.overlaps(eb), (a, b)
    for name, extent in named.items():
        assert frame.x0 <= extent.x0 and extent.x1 <= frame.x1, name
        assert frame.y0 <= extent.y0 and extent.y1 <= frame.y1, name


def test_each_cell_has_its_tolerance_band_and_repeats_their_interval() -> None:
    points = cluster()
    fig = charts.predicted_vs_measured(points, "fit")
    bars = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    charts.close(fig)
    # one collection of vertical bars for the bands (every cell), one per bound with repeats
    band, *intervals = [[(s[0][1], s[1][1]) for s in c.get_segments()] for c in bars]
    assert band[-2] == pytest.approx((900 * 0.88, 900 * 1.12))  # predicted x (1 ± 0.12)
    assert band[0] == pytest.approx((14000 * 0.95, 14000 * 1.05))
    assert sorted(intervals) == [[(4.0, 6.5)], [(850.0, 930.0)]]
