"""lab/run/ingest.py on made-up outputs: any layout of summaries and samples files below DIR
becomes a run with one row (the target from --target or cell.json); a bad DIR, an empty or
malformed file is one line and exit 2, with no run folder left behind. (Real k6 outputs:
tests/e2e/test_segmented_runs.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness.k6files import LAB, summary, write_samples

from lab import cli
from lab.rundir import read_rows

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def ingest(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = cli.main(["ingest", *args])
    except SystemExit as exc:  # argparse's own mistakes
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def runner(folder: Path, name: str, main: list[float], **kwargs) -> Path:
    """One runner's outputs, as kubectl cp lays them out: a folder of its own."""
    (folder / name).mkdir(parents=True)
    (folder / name / "summary.json").write_text(json.dumps(summary(len(main), **kwargs)))
    write_samples(folder / name / "samples.csv.gz", main)
    return folder


def test_two_runners_make_one_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = runner(tmp_path / "in", "r-1", [1.0] * 60, seconds=10)
    runner(outputs, "r-2", [3.0] * 40, seconds=8)
    code, err = ingest(capsys, str(outputs), "--target", "mine", "--out", str(tmp_path / "res"))
    assert code == 0, err
    (row,) = read_rows(tmp_path / "res" / "latest" / "results.csv")
    assert (row.target, row.profile, row.endpoint, row.vus) == ("mine", "remote", "hello", 10)
    assert (row.requests, row.rps) == (100, pytest.approx(60 / 10 + 40 / 8))
    assert row.lat_p50_ms == pytest.approx(1.0) and row.lat_p99_ms == pytest.approx(3.0)
    assert (row.measured_s, row.verdict, row.status) == (10.0, "no model", "ok")
    assert row.loadgens == 2  # the runners the load was split into


def test_the_target_from_cell_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`lab k6-operator`'s cell.json, beside the runners' folder, names the target."""
    cell = {"target": "gin", "profile": "release", "endpoint": "hello", "params": {}, "vus": 10}
    cell |= {"rate": None, "duration": "10s", "repeat": 1}
    (tmp_path / "cell.json").write_text(json.dumps({"cell": cell}))
    outputs = runner(tmp_path / "runners", "r-1", [1.0] * 50)
    code, err = ingest(capsys, str(outputs), "--out", str(tmp_path / "res"))
    assert code == 0, err
    (row,) = read_rows(tmp_path / "res" / "latest" / "results.csv")
    assert row.cell == "gin/release/hello?@vus=10#1"
    # a cell.json of another cell than the summaries' is refused
    (tmp_path / "cell.json").write_text(json.dumps({"cell": {**cell, "vus": 99}}))
    code, err = ingest(capsys, str(outputs), "--out", str(tmp_path / "res2"))
    assert code == 2 and "another cell" in err


def broken(folder: Path, case: str) -> Path:
    if case == "not-a-folder":
        return folder / "nowhere"
    folder.mkdir()
    if case == "empty":
        return folder
    runner(folder, "r-1", [1.0] * 50)
    if case == "bad-json":
        (folder / "r-1" / "summary.json").write_text('{"metrics": ')
    elif case == "other-json":
        (folder / "r-1" / "summary.json").write_text('{"hello": 1}')
    elif case == "no-samples":
        (folder / "r-1" / "samples.csv.gz").unlink()
    elif case == "empty-samples":
        (folder / "r-1" / "samples.csv.gz").write_bytes(b"")
    elif case == "bad-samples":
        (folder / "r-1" / "samples.csv.gz").write_bytes(b"\x1f\x8bnot gzip")
    elif case == "too-few-samples":
        write_samples(folder / "r-1" / "samples.csv.gz", [1.0] * 49)
    elif case == "two-cells":
        runner(folder, "r-2", [1.0] * 50, lab={**LAB, "vus": 20})
    elif case == "bad-summary":
        data = summary(50)
        data["metrics"]["http_reqs{scenario:main}"]["values"]["count"] = "many"
        (folder / "r-1" / "summary.json").write_text(json.dumps(data))
    elif case == "no-target":
        pass
    return folder


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not-a-folder", "is not a folder"),
        ("empty", "no k6 summary"),
        ("bad-json", "not readable as JSON"),
        ("other-json", "not a k6 summary"),
        ("no-samples", "1 summaries but 0 samples files"),
        ("empty-samples", "not k6's CSV output"),
        ("bad-samples", "cannot read"),
        ("too-few-samples", "49 successful main requests, the summaries 50"),
        ("two-cells", "different cells"),
        ("bad-summary", "malformed"),
        ("no-target", "pass --target"),
    ],
)
def test_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, expected: str
) -> None:
    folder = broken(tmp_path / "in", case)
    target = [] if case == "no-target" else ["--target", "mine"]
    code, err = ingest(capsys, str(folder), *target, "--out", str(tmp_path / "res"))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert not list((tmp_path / "res").glob("2*")), "a run folder was left behind"
