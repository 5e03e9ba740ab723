"""Published claims re-run (lab/report/posts.py, `just reproduce`): the posts' figures as data,
the mapping from a claim to the cell that re-creates it, the three-column table from fixture
rows, the k6 iterations executor, the command line, and one short real run."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from harness.labrun import k6_inspect, run_lab  # run_lab: the session's own run lock

from lab import ROOT
from lab.matrix import Cell, Matrix, MatrixError, expand, load_matrix
from lab.report import posts
from lab.report import published as report_published
from lab.report.groups import read_grouped
from lab.run import loadgen
from lab.rundir import COLUMNS, read_rows, read_run
from lab.targets import UnknownChoice

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

POSTS = ["coroutines", "flask-workers", "speedup", "wrk-gin"]
FIXTURES = Path(__file__).parent / "fixtures"


def claims(name: str) -> dict[str, posts.Claim]:
    return {c.id: c for c in posts.claims_of(load_matrix(name))}


def specs(name: str) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in load_matrix(name).cells}


# --- the data -----------------------------------------------------------------------------


def test_the_four_posts_are_the_post_matrices() -> None:
    assert posts.posts() == POSTS
    assert "quick" not in posts.posts()


@pytest.mark.parametrize("name", POSTS)
def test_every_post_is_cited_and_every_claim_names_a_cell(name: str) -> None:
    matrix = load_matrix(name)
    post = posts.post_of(matrix)
    assert post.title and post.experiment
    assert post.title in post.citation
    cells = {s["name"] for s in matrix.cells}
    for c in posts.claims_of(matrix):
        assert c.cell in cells and (c.minus is None or c.minus in cells)
        assert c.reading and c.published >= 0
    # every cell of the experiment backs at least one published figure
    used = {c.cell for c in posts.claims_of(matrix)} | {
        c.minus for c in posts.claims_of(matrix) if c.minus
    }
    assert used == cells


def test_years_are_recorded_where_the_issue_gives_them() -> None:
    years = {n: posts.post_of(load_matrix(n)).year for n in POSTS}
    assert years == {"coroutines": None, "flask-workers": None, "speedup": 2021, "wrk-gin": 2023}
    assert "year not recorded" in posts.post_of(load_matrix("coroutines")).citation


def test_the_published_figures() -> None:
    figures = {n: {i: c.published for i, c in claims(n).items()} for n in POSTS}
    assert figures["coroutines"] == {
        "flask-hello": 6.5,
        "fastapi-hello": 4.7,
        "flask-sleep": 19.9,
        "fastapi-sleep": 19.7,
    }
    assert figures["speedup"] == {
        "sequential-2": 3.5,
        "concurrent-2": 1.8,
        "sequential-third": 1.5,
        "concurrent-third": 0.0,
        "hello": 7.0,
        "async-hello": 21.0,
    }
    assert figures["flask-workers"] == {
        "sync-all": 4.0,
        "sync-staircase": 2.5,
        "async-all": 4.0,
        "tasks-all": 2.0,
    }
    assert figures["wrk-gin"] == {
        "fastapi-blocking": 0.80,
        "fastapi-executor": 11.17,
        "fastapi-async": 93.10,
        "fastapi-def": 37.24,
        "flask-cpu-pool": 50.79,
        "flask-cpu": 10.04,
        "gin-sync": 97.80,
        "gin-async-honest": 78261.0,
        "gin-async-empty": 78261.0,
    }


def test_the_experiments_use_the_posts_load() -> None:
    """Same concurrency, waits, worker counts and request counts as the posts."""
    c = specs("coroutines")
    assert all((s["vus"], s["iterations"]) == (1, 1000) for s in c.values())  # sequential
    assert c["flask-sleep"]["params"] == {"ms": 10} and c["flask-hello"]["profile"] == "dev"
    f = load_matrix("flask-workers")
    assert f.env == {"WORKERS": "4"}
    assert all((s["vus"], s["iterations"]) == (16, 1) for s in f.cells)  # a burst of 16
    assert specs("flask-workers")["two-tasks"]["params"] == {"ms": 500, "n": 2}
    s = specs("speedup")
    assert s["sequential-3"]["endpoint"] == "upstream-seq" and s["concurrent-3"]["params"] == {
        "ms": 1000,
        "n": 3,
    }
    w = load_matrix("wrk-gin")
    assert w.duration == "15s"  # wrk -d15s
    assert all(s["vus"] == 100 and "iterations" not in s for s in w.cells)  # wrk -c100
    assert specs("wrk-gin")["flask-cpu"]["params"] == {"n": 5_000_000}
    # the fake Gin "async" is shown against the honest /async and against an empty handler
    gin = claims("wrk-gin")
    assert (gin["gin-async-honest"].cell, gin["gin-async-empty"].cell) == ("gin-async", "gin-hello")


def _post(**claim: Any) -> Matrix:
    base = {
        "id": "a",
        "label": "a figure",
        "published": 1.0,
        "metric": "rps",
        "cell": "one",
        "reading": "why",
    }
    cells = [{"name": "one", "target": "go", "endpoint": "sync", "vus": 2}]
    post = {"title": "T", "experiment": "E", "claims": [{**base, **claim}]}
    return Matrix("t", cells=cells, post=post)


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"metric": "speed"}, "metric 'speed'"),
        ({"published": "fast"}, "published must be a number"),
        ({"published": -1}, ">= 0"),
        ({"cell": "two"}, "cell 'two' is not one of the [[cells]] names"),
        ({"minus": "two"}, "minus 'two'"),
        ({"metric": "total_s"}, "per (requests per figure)"),
        ({"per": 10}, "per (requests per figure)"),
        ({"reading": "see {nope}"}, "reading names {nope}"),
        ({"label": ""}, "label must be a non-empty string"),
    ],
)
def test_bad_claims_are_refused(claim: dict[str, Any], message: str) -> None:
    with pytest.raises(MatrixError, match="claim a") as err:
        posts.claims_of(_post(**claim))
    assert message in str(err.value)


def test_duplicate_claim_ids_are_refused() -> None:
    matrix = _post()
    matrix.post["claims"].append(dict(matrix.post["claims"][0]))
    with pytest.raises(MatrixError, match="duplicate id"):
        posts.claims_of(matrix)


def test_unknown_post_lists_the_posts() -> None:
    with pytest.raises(UnknownChoice) as err:
        posts.load_post("quick")
    assert str(err.value) == f"unknown post 'quick'; choose from: {', '.join(POSTS)}"


# --- cells: explicit, with a fixed number of requests --------------------------------------


def test_cell_keys_are_the_ids_the_runner_writes() -> None:
    for name in POSTS:
        matrix = load_matrix(name)
        ids = [c.id for c in expand(matrix)]
        keys = posts.cell_keys(matrix)
        assert [f"{k}#1" for k in keys.values()] == ids
    keys = posts.cell_keys(load_matrix("flask-workers"))
    assert keys["two-tasks"] == "flask/gunicorn/gather?ms=500,n=2@vus=16,iterations=1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"vus": 0}, "vus must be an integer >= 1"),
        ({"iterations": "ten"}, "iterations must be an integer >= 1"),
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"endpoint": "nope"}, "unknown endpoint 'nope'"),
        ({"profile": "nope"}, "unknown gin profile 'nope'"),
        ({"params": {"ms": 10001}}, "ms must be between 0 and 10000"),
    ],
)
def test_bad_cells_are_refused(spec: dict[str, Any], message: str) -> None:
    cell = {"name": "one", "target": "go", "endpoint": "sync", **spec}
    with pytest.raises((MatrixError, UnknownChoice)) as err:
        expand(Matrix("t", cells=[cell]))
    assert message in str(err.value)


def test_cell_with_iterations_round_trips_and_old_cells_still_load() -> None:
    c = Cell("gin", "release", "sync", (("ms", 5),), 16, None, "30s", 1, iterations=1)
    assert c.id == "gin/release/sync?ms=5@vus=16,iterations=1#1"
    assert Cell.from_json(json.loads(json.dumps(c.to_json()))) == c
    old = {k: v for k, v in c.to_json().items() if k != "iterations"}  # an earlier run.json
    assert Cell.from_json(old).iterations is None


def test_k6_runs_a_fixed_number_of_requests_without_the_canary(tmp_path: Path) -> None:
    c = Cell("gin", "release", "sync", (("ms", 5),), 16, None, "30s", 1, iterations=3)
    env = loadgen.environment(c, "http://127.0.0.1:9", tmp_path / "s.json", 5)
    assert (env["ITERATIONS"], env["CANARY_RATE"]) == ("3", "0")
    done = k6_inspect(env)
    assert done.returncode == 0, done.stderr
    scenarios = json.loads(done.stdout)["scenarios"]
    assert set(scenarios) == {"main"}
    main = scenarios["main"]
    assert main["executor"] == "per-vu-iterations"
    assert (main["vus"], main["iterations"], main["maxDuration"]) == (16, 3, "30s")
    plain = loadgen.environment(
        Cell("gin", "release", "sync", (("ms", 5),), 2, None, "3s", 1), "http://x", tmp_path, 5
    )
    assert "ITERATIONS" not in plain


def test_k6_refuses_iterations_with_a_rate() -> None:
    env = {**os.environ, "BASE_URL": "http://127.0.0.1:9", "ENDPOINT": "hello"}
    env.update(ITERATIONS="3", RATE="5", K6_NO_USAGE_REPORT="true")
    done = k6_inspect(env)
    assert done.returncode != 0
    assert "ITERATIONS and RATE exclude each other" in done.stderr


# --- measured: the mapping from rows to the three columns (fixtures) -----------------------


def row(cell: str, status: str = "ok", **values: float | None) -> dict[str, str]:
    return {"cell": f"{cell}#1", "status": status, **{k: str(v) for k, v in values.items()}}


def keys_for(*names: str) -> dict[str, str]:
    return {n: f"t/p/{n}?@vus=1" for n in names}


def measured(claim: posts.Claim, rows: list[dict[str, str]]) -> posts.Line:
    """The claim measured by these rows, read back from a results.csv as a run writes it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.csv"
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        results = posts.ok_by_key(read_rows(path))
    names = [claim.cell] + ([claim.minus] if claim.minus else [])
    return posts.measure([claim], keys_for(*names), results)[0]


def claim(metric: str, **more: Any) -> posts.Claim:
    fields = {"id": "x", "label": "l", "published": 1.0, "metric": metric, "cell": "a"}
    return posts.Claim(**{**fields, "reading": "r", **more})


def test_rps_is_the_median_over_repeats() -> None:
    rows = [
        row("t/p/a?@vus=1", rps=10, predicted_rps=12),
        {**row("t/p/a?@vus=1", rps=30, predicted_rps=12), "cell": "t/p/a?@vus=1#2"},
        {**row("t/p/a?@vus=1", rps=20, predicted_rps=12), "cell": "t/p/a?@vus=1#3"},
        {**row("t/p/a?@vus=1", "error", rps=999), "cell": "t/p/a?@vus=1#4"},
    ]
    line = measured(claim("rps"), rows)
    assert (line.measured, line.predicted) == (20.0, 12.0)


def test_total_time_of_a_sequential_client() -> None:
    line = measured(
        claim("total_s", per=1000), [row("t/p/a?@vus=1", rps=80.0, predicted_rps=100.0)]
    )
    assert line.measured == pytest.approx(12.5)  # 1,000 / 80 rps
    assert line.predicted == pytest.approx(10.0)


def test_latency_makespan_and_no_model() -> None:
    # a burst of 16 on 4 slots of 1 s: the model's mean answer 2.5 s, its last 16 / 4 rps = 4 s
    r = row(
        "t/p/a?@vus=1",
        vus=16,
        lat_avg_ms=2510.0,
        lat_max_ms=4013.0,
        predicted_latency_ms=2500.0,
        predicted_rps=4.0,
    )
    burst = measured(claim("latency_s"), [r])
    assert (burst.measured, burst.predicted) == (pytest.approx(2.51), pytest.approx(2.5))
    assert measured(claim("latency_ms"), [r]).measured == pytest.approx(2510.0)
    span = measured(claim("makespan_s"), [r])
    assert (span.measured, span.predicted) == (pytest.approx(4.013), pytest.approx(4.0))
    hello = measured(claim("latency_ms"), [row("t/p/a?@vus=1", lat_avg_ms=1.9)])
    assert (hello.measured, hello.predicted) == (1.9, None)
    assert "no model" in posts.cells_of(hello)


def test_minus_is_the_difference_of_two_cells() -> None:
    rows = [
        row("t/p/a?@vus=1", lat_avg_ms=3012.0, predicted_latency_ms=3000.0),
        row("t/p/b?@vus=1", lat_avg_ms=2010.0, predicted_latency_ms=2000.0),
    ]
    line = measured(claim("latency_s", minus="b"), rows)
    assert line.measured == pytest.approx(1.002)
    assert line.predicted == pytest.approx(1.0)


def test_a_cell_without_a_good_row_leaves_the_columns_empty() -> None:
    line = measured(claim("rps"), [row("t/p/a?@vus=1", "error", rps=5)])
    assert (line.measured, line.predicted) == (None, None)
    assert "cell a was not measured" in posts.cells_of(line)[4]


def test_readings_name_this_runs_numbers() -> None:
    c = claim(
        "total_s",
        per=1000,
        published=19.9,
        reading="{per_request_ms} ms a request; post {factor}; {measured} vs {predicted}",
    )
    line = posts.Line(c, 13.5, 10.0)
    assert posts.reading_of(line) == "+3.5 ms a request; post 1.5x; 13.50 vs 10.00"
    assert posts.reading_of(posts.Line(c, None, None, "no row")).startswith(
        "- ms a request; post -; - vs -"
    )


def test_a_difference_carries_its_own_sign_and_the_wait_is_named() -> None:
    # coroutines' flask-sleep as measured: 11.41 s for 1,000 requests of a 10 ms wait, the
    # model 11.28 s: 1.4 ms a request beyond the wait, 0.13 ms beyond the model
    c = claim("total_s", per=1000, reading="{over_wait_ms} | {per_request_ms} | {gap} | {verdict}")
    line = posts.Line(c, 11.41, 11.28, wait_ms=10.0)
    assert posts.reading_of(line) == "+1.4 | +0.1 | +0.13 | as predicted (0.99)"
    faster = posts.Line(c, 11.18, 11.28, wait_ms=10.0)
    assert posts.reading_of(faster) == "+1.2 | -0.1 | -0.10 | as predicted (1.01)"


@pytest.mark.parametrize(
    ("metric", "measured", "predicted", "verdict"),
    [
        ("rps", 99.0, 100.0, "as predicted (0.99)"),
        ("rps", 100.0, 100.0, "as predicted (1.00)"),
        ("rps", 90.0, 100.0, "below the model (0.90)"),
        ("rps", 110.0, 100.0, "above the model (1.10)"),
        ("latency_s", 2.75, 2.5, "below the model (0.91)"),  # slower than predicted
        ("total_s", 9.0, 10.0, "above the model (1.11)"),
        ("rps", 90.0, None, "not judged (no prediction)"),
    ],
)
def test_the_verdict_of_a_figure(
    metric: str, measured: float, predicted: float | None, verdict: str
) -> None:
    c = claim(metric, per=1000 if metric == "total_s" else None, reading="{verdict}")
    assert posts.reading_of(posts.Line(c, measured, predicted)) == verdict
    # the cell's own tolerance judges it (a noisy host's CPU-bound cell: 15 %)
    if predicted and metric == "rps":
        wide = posts.reading_of(posts.Line(c, measured, predicted, tolerance=0.15))
        assert wide.startswith("as predicted")


# --- every reading against its figures -----------------------------------------------------

SIGN_CLASH = re.compile(r"[+-]\s*[+-]\s*\d")
PER_REQUEST = re.compile(r"([+-]?\d[\d,]*(?:\.\d+)?) ms a request")
VERDICT_PHRASES = {
    "below the model": "below model",
    "above the model": "above model",
    "as predicted": "as predicted",
}


def contradictions(line: posts.Line) -> list[str]:
    """What a reading says that its figures deny, judged apart from posts.py's own
    arithmetic: a sign clash ("+ -0.1"), a verdict the figures do not give (measured /
    predicted, inverted for a time, at the cell's tolerance), "no model" beside a
    prediction, and "X ms a request" other than the measured time per request beyond the
    wait."""
    text = posts.reading_of(line)
    found = []
    if SIGN_CLASH.search(text):
        found.append(f"a sign clash: {text!r}")
    c, m, p = line.claim, line.measured, line.predicted
    truth = "no model"
    if m and p and not c.minus:
        ratio = m / p if c.metric == "rps" else p / m
        tol = 0.05 if line.tolerance is None else line.tolerance
        truth = "as predicted"
        if abs(ratio - 1) > tol:
            truth = "below model" if ratio < 1 else "above model"
    for phrase, verdict in VERDICT_PHRASES.items():
        if phrase in text.lower() and verdict != truth:
            found.append(f"says {phrase!r} where the figures give {truth!r}: {text!r}")
    if "no model" in text.lower() and p is not None:
        found.append(f"says 'no model' beside a prediction of {p}: {text!r}")
    for match in PER_REQUEST.finditer(text):
        said = float(match.group(1).replace(",", ""))
        per = c.per or 1
        took = None if m is None else m / per * 1000 - (line.wait_ms or 0.0)
        if took is None or abs(said - took) > 0.051:
            found.append(f"says {match.group(0)!r} where a request took {took} ms beyond its wait")
    return found


def test_the_check_catches_the_readings_that_were_wrong() -> None:
    """The readings issue 24 found: "+ -0.1 ms a request" on a cell that took 1.2 ms more per
    request than its 10 ms, and "Below the model" on cells at 0.99 and 1.00."""
    sleep = claim("total_s", per=1000, reading="here + {per_request_ms} ms a request")
    cell = posts.Line(sleep, 11.2, 11.3, wait_ms=10.0)
    assert len(contradictions(cell)) == 2  # the sign clash, and -0.1 is not the 1.2 it took
    cpu = claim("rps", reading="One GIL per process. Below the model: others shared the CPU.")
    for measured in (9.9, 10.0):
        assert contradictions(posts.Line(cpu, measured, 10.0))
    assert not contradictions(posts.Line(cpu, 8.0, 10.0))
    hello = claim("latency_ms", reading="No model: the route does no work.")
    assert contradictions(posts.Line(hello, 0.56, 0.55))
    assert not contradictions(posts.Line(hello, 0.56, None))


def figures(c: posts.Claim) -> list[posts.Line]:
    """The claim measured as any run could: on the model, just inside and outside its
    tolerance either way, without a prediction; from a value near the published one."""
    base = max(c.published, 1.0)
    lines = [posts.Line(c, None, None, "cell a was not measured")]
    for ratio in (1.0, 0.99, 1.01, 0.94, 1.06, 0.7, 1.4):
        measured = base * ratio
        lines.append(posts.Line(c, measured, base, wait_ms=0.0))
        lines.append(posts.Line(c, measured, None, wait_ms=0.0))
        if c.metric == "total_s":  # a wait of 10 ms a request under it
            lines.append(posts.Line(c, measured, base, wait_ms=base / (c.per or 1) * 1000 / 2))
    return lines


@pytest.mark.parametrize("name", POSTS)
def test_every_reading_agrees_with_its_figures(name: str) -> None:
    for c in posts.claims_of(load_matrix(name)):
        for line in figures(c):
            assert contradictions(line) == [], c.id


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "posts").iterdir()))
def test_every_reading_of_a_stored_run_agrees_with_its_figures(name: str) -> None:
    """Runs of `just reproduce` on this machine (tests/unit/fixtures/posts/: run.json trimmed
    to the matrix, results.csv as written), read with the post's readings of today."""
    run = read_run(FIXTURES / "posts" / name)
    rep = posts.from_run(run)
    assert rep is not None and rep.lines
    today = {c.id: c for c in posts.claims_of(load_matrix(rep.post.name))}
    for line in rep.lines:
        assert line.measured is not None, line.note
        line = dataclasses.replace(line, claim=today[line.claim.id])
        assert contradictions(line) == [], line.claim.id


# --- the table, the report section and summary.md (a fixture run) --------------------------


def fixture_run(tmp_path: Path, name: str = "flask-workers") -> Path:
    """A run folder as `just reproduce flask-workers` writes it, with made-up numbers."""
    matrix = load_matrix(name)
    cells = expand(matrix)
    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "run_id": "fixture",
                "status": "complete",
                "matrix": matrix.to_json(),
                "cells": [c.to_json() for c in cells],
            }
        )
    )
    numbers = {  # predicted as model.predict_burst: the staircase's mean, k / its last answer
        "sync": dict(rps=4.0, lat_avg_ms=2510, lat_max_ms=4013, predicted_latency_ms=2503,
                     predicted_rps=16 / 4.006),
        "async": dict(rps=4.0, lat_avg_ms=2520, lat_max_ms=4044, predicted_latency_ms=2503,
                      predicted_rps=16 / 4.006),
        "gather": dict(rps=7.9, lat_avg_ms=1260, lat_max_ms=2024, predicted_latency_ms=1253,
                       predicted_rps=16 / 2.004),
    }  # fmt: skip
    with (tmp_path / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for c in cells:
            d = {"cell": c.id, "target": c.target, "profile": c.profile, "endpoint": c.endpoint,
                 "vus": c.vus, "status": "ok", "repeat": 1, **numbers[c.endpoint]}  # fmt: skip
            writer.writerow(d)
    return tmp_path


def test_table_from_a_fixture_run(tmp_path: Path) -> None:
    rep = posts.from_run(read_run(fixture_run(tmp_path)))
    assert rep is not None and rep.post.name == "flask-workers"
    got = {line.claim.id: (line.measured, line.predicted) for line in rep.lines}
    assert got == {
        "sync-all": (pytest.approx(4.013), pytest.approx(4.006)),
        "sync-staircase": (pytest.approx(2.51), pytest.approx(2.503)),
        "async-all": (pytest.approx(4.044), pytest.approx(4.006)),
        "tasks-all": (pytest.approx(2.024), pytest.approx(2.004)),
    }
    text = posts.text_table(rep)
    assert "published" in text and "measured" in text and "predicted" in text
    assert "sync view: all 16 answered [s]" in text
    assert "4.00         4.01         4.01" in text
    assert "2.50         2.51         2.50" in text  # the staircase's mean, not N / X = 4 s
    md = posts.markdown(rep)
    assert "| claim | published | measured here | predicted (model) | reading |" in md
    assert (
        "| 2 concurrent 0.5 s tasks per request: all 16 answered [s] | 2.00 | 2.02 | 2.00 |" in md
    )
    assert "`just reproduce flask-workers`" in md


def test_report_section_and_summary(tmp_path: Path) -> None:
    from lab import report

    run = fixture_run(tmp_path)
    html = report.build(run).read_text()
    assert '<section id="published">\n<h2>Published claims</h2>' in html
    assert "<td>2.51</td><td>2.50</td>" in html  # the staircase: measured, predicted
    assert "Flask 4 workers vs FastAPI" in html
    summary = (run / "summary.md").read_text()
    assert "## Published claims" in summary and "| async def view: all 16 answered [s] |" in summary


def test_no_section_for_other_runs(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"matrix": load_matrix("quick").to_json()}))
    assert report_published.claims(read_grouped(tmp_path), None) is None  # type: ignore[arg-type]
    assert report_published.markdown(read_grouped(tmp_path)) == ""
    assert posts.from_run(read_run(tmp_path / "missing")) is None


def test_a_broken_post_in_run_json_is_one_line_in_the_report(tmp_path: Path) -> None:
    run = fixture_run(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    meta["matrix"]["post"]["claims"][0]["metric"] = "speed"
    (run / "run.json").write_text(json.dumps(meta))
    claims = report_published.claims(read_grouped(run), None)  # type: ignore[arg-type]
    assert claims is not None and "could not be read" in claims.problem


# --- the command line ---------------------------------------------------------------------


def test_reproduce_alone_lists_the_posts() -> None:
    done = run_lab("reproduce")
    assert done.returncode == 0, done.stderr
    for name in POSTS:
        assert name in done.stdout
    assert '"Speeding Up API Endpoints using Python AsyncIO" (2021)' in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["reproduce", "nope"],
            "lab: error: unknown post 'nope'; choose from: " + ", ".join(POSTS),
        ),
        (["bench-all", "--matrix", "wrk-gin", "--vus", "5"], "--vus cannot change it"),
        (["bench", "go", "sync", "--matrix", "flask-workers"], "a single target cannot"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = run_lab(*args)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert message in done.stderr


def test_readme_lists_every_post() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Reproducing published benchmarks", 1)[1].split("\n## ", 1)[0]
    for name in POSTS:
        matrix = load_matrix(name)
        assert f"`{name}`" in section
        assert posts.post_of(matrix).title.split(" (")[0] in section


def test_estimate_of_a_fixed_number_of_requests() -> None:
    cells = {c.endpoint: c for c in expand(load_matrix("coroutines"))}
    assert cells["sync"].expected_s == pytest.approx(1000 * 0.012)  # 10 ms + 2 ms, 1,000 times
    assert cells["hello"].expected_s == pytest.approx(2.0)
    capped = Cell("gin", "release", "sync", (("ms", 1000),), 1, None, "5s", 1, iterations=10)
    assert capped.expected_s == 5.0
    assert Cell("gin", "release", "sync", (("ms", 5),), 1, None, "7s", 1).expected_s == 7.0
