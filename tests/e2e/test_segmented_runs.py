"""The merge of k6 instances split by execution segments is exact, on real k6 runs: one cell
(/sync?ms=20, 12 VUs, 2 s, against the Go target) run at once unsplit and split into 2, 3 and
4 instances; every instance's own summary percentiles equal k6's rule over its own samples,
and the merged ones equal those of all the samples in one place. (The skewed fixture where
averaging percentiles fails is in tests/unit/test_segments.py.)"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy
import pytest
from harness.labrun import run_lab

from lab import targets
from lab.matrix import Cell
from lab.proc import server
from lab.run import k6operator, loadgen, segments
from lab.rundir import read_rows

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

SPLITS = (1, 2, 3, 4)
CELL = Cell("go", "default", "sync", (("ms", 20),), 12, None, "2s", 1)
CANARY_RATE = 6  # per second, split like the VUs


@dataclass
class Split:
    """One cell's run as n instances: each one's summary (handleSummary's JSON) and samples."""

    n: int
    summaries: list[dict[str, Any]]
    samples: list[Path]
    summary_paths: list[Path]


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Split]]:
    """The cell, run unsplit and split in 2, 3 and 4, all ten instances at once."""
    folder = tmp_path_factory.mktemp("segments")
    proc = server.target_server(targets.find("go")).start()
    started: list[tuple[int, subprocess.Popen[bytes]]] = []
    try:
        for n in SPLITS:
            for i in range(n):
                stem = folder / f"split{n}-{i}"
                env = loadgen.environment(
                    CELL, proc.url, stem.with_suffix(".json"), CANARY_RATE, graceful_stop_s=1.0
                )
                command = [
                    loadgen.binary(), "run", "--quiet", "--no-color", "--address", "",
                    *segments.k6_args(i, n, stem.with_suffix(segments.SAMPLES_SUFFIX)),
                    str(loadgen.SCRIPT),
                ]  # fmt: skip
                log = stem.with_suffix(".log").open("wb")
                started.append((n, subprocess.Popen(command, env=env, stdout=log, stderr=log)))
        for _, k6 in started:
            assert k6.wait(timeout=30) == 0, f"k6 failed: see {folder}"
    finally:
        for _, k6 in started:
            if k6.poll() is None:
                k6.kill()
                k6.wait(5)
        proc.stop()
    out = {}
    for n in SPLITS:
        paths = [folder / f"split{n}-{i}.json" for i in range(n)]
        out[n] = Split(
            n,
            [json.loads(p.read_text()) for p in paths],
            [folder / f"split{n}-{i}{segments.SAMPLES_SUFFIX}" for i in range(n)],
            paths,
        )
    yield out


def read_all(samples: list[Path]) -> tuple[list[float], list[float]]:
    """The main scenario's successful durations and the canary's, read independently of
    segments.py (csv.DictReader over every row)."""
    main, canary = [], []
    for path in samples:
        with gzip.open(path, "rt", newline="") as f:
            for row in csv.DictReader(f):
                if row["metric_name"] != "http_req_duration":
                    continue
                if row["scenario"] == "main" and row["expected_response"] == "true":
                    main.append(float(row["metric_value"]))
                elif row["scenario"] == "canary":
                    canary.append(float(row["metric_value"]))
    return main, canary


RESOLUTION_MS = 1e-6  # the CSV's 6 decimals of a millisecond
LATENCY_KEYS = ("lat_avg_ms", "lat_p50_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms")


def test_each_instance_summary_equals_k6s_rule_over_its_samples(splits: dict[int, Split]) -> None:
    """k6's own p(50/90/95/99) of every instance (the unsplit one too) are segments' over the
    samples that instance wrote: the rule and the output agree with k6's summary."""
    for split in splits.values():
        for data, samples in zip(split.summaries, split.samples, strict=True):
            own, merged = loadgen.parse_summary(data), segments.merge([data], [samples])
            assert own["requests"] > 50, own
            for key in (*LATENCY_KEYS, "lat_max_ms", "canary_p50_ms", "canary_p99_ms"):
                if own[key] is None or merged[key] is None:  # an instance without a canary VU
                    assert key.startswith("canary"), (key, own, merged)
                    continue
                assert merged[key] == pytest.approx(own[key], abs=RESOLUTION_MS), key
            for key in ("requests", "failed_requests", "dropped", "failures"):
                assert merged[key] == own[key]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_split_run_merges_to_the_percentiles_of_all_its_samples(
    splits: dict[int, Split], n: int
) -> None:
    split = splits[n]
    merged = segments.merge(split.summaries, split.samples)
    main, canary = read_all(split.samples)
    assert (
        merged["requests"]
        == len(main)
        == sum(loadgen.parse_summary(s)["requests"] for s in split.summaries)
    )
    for p in (50, 90, 95, 99):
        assert merged[f"lat_p{p}_ms"] == pytest.approx(numpy.percentile(main, p), abs=1e-9)
    assert merged["lat_avg_ms"] == pytest.approx(numpy.mean(main))
    assert merged["lat_max_ms"] == max(main)
    assert merged["canary_p99_ms"] == pytest.approx(numpy.percentile(canary, 99), abs=1e-9)

    # a closed loop's rate is its VUs over their cycles: by Little's law N = X (R + Z), Z being
    # k6's own time from an answer to the next request: X R is N less X Z, which ten k6 on two
    # CPUs make up to a few percent of N here (a rate from the wrong VU count is off by 2-4x)
    def in_flight(row: dict[str, Any]) -> float:
        return row["rps"] * row["lat_avg_ms"] / 1000

    assert 0.8 * CELL.vus <= in_flight(merged) <= 1.02 * CELL.vus, merged
    cycling = [s["metrics"]["lab_cycling_vus"]["values"]["count"] for s in split.summaries]
    assert sum(cycling) == CELL.vus, cycling  # every VU cycled, each in one instance
    for data, vus in zip(split.summaries, cycling, strict=True):  # its own VUs, not the cell's
        own = loadgen.parse_summary(data)
        assert 0.8 * vus <= in_flight(own) <= 1.02 * vus, (vus, own)
    # every instance ran its share of the VUs (main's 12 and the canary's), not all of them
    whole = splits[1].summaries[0]["metrics"]["vus_max"]["values"]["max"]
    shares = [s["metrics"]["vus_max"]["values"]["max"] for s in split.summaries]
    assert all(share < whole for share in shares) and sum(shares) >= CELL.vus, (whole, shares)


def test_k6_operator_folder_then_ingest(splits: dict[int, Split], tmp_path: Path) -> None:
    """The k6-operator path without a cluster: `lab k6-operator` writes the archive (checked by
    k6 inspect: the cell's load, its values stored) and the TestRun; the runners' outputs,
    collected as kubectl cp lays them out (a folder per runner pod), are the 3-way split's;
    `lab ingest` makes them a run with one row, the merge of the three."""
    folder = tmp_path / "op"
    done = run_lab(
        "k6-operator", "go", "sync", "--url", "http://go.default.svc:8000", "--parallelism", "3",
        "--vus", "12", "--duration", "2s", "--ms", "20", "--canary-rate", str(CANARY_RATE),
        "--out", str(folder),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"just ingest {folder / 'runners'}" in done.stdout
    inspect = subprocess.run(
        [loadgen.binary(), "inspect", str(folder / k6operator.ARCHIVE)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert inspect.returncode == 0, inspect.stderr
    scenarios = json.loads(inspect.stdout)["scenarios"]
    assert scenarios["main"]["executor"] == "constant-vus"
    assert (scenarios["main"]["vus"], scenarios["main"]["duration"]) == (12, "2s")
    assert scenarios["canary"]["rate"] == CANARY_RATE
    with tarfile.open(folder / k6operator.ARCHIVE) as tar:
        env = json.load(tar.extractfile("metadata.json"))["env"]  # type: ignore[arg-type]
    assert env["BASE_URL"] == "http://go.default.svc:8000" and env["MS"] == "20"
    assert env["SUMMARY"] == k6operator.SUMMARY  # in the runner's own folder of the volume
    testrun = json.loads((folder / "testrun.json").read_text())
    assert testrun["spec"]["parallelism"] == 3

    split = splits[3]
    runners = folder / "runners"
    for i, (summary, samples) in enumerate(zip(split.summary_paths, split.samples, strict=True)):
        pod = runners / f"lab-gin-sync-{i + 1}-x{i}z"
        pod.mkdir(parents=True)
        shutil.copy(summary, pod / "summary.json")
        shutil.copy(samples, pod / "samples.csv.gz")
    results = tmp_path / "results"
    done = run_lab("ingest", str(runners), "--out", str(results))
    assert done.returncode == 0, done.stderr
    (row,) = read_rows(results / "latest" / "results.csv")
    merged = segments.merge(split.summaries, split.samples)
    assert (row.status, row.target, row.endpoint, row.ms, row.vus) == ("ok", "gin", "sync", 20, 12)
    assert row.cell == "gin/release/sync?ms=20@vus=12#1"  # "go" is gin's alias
    assert row.verdict == "no model" and row.predicted_rps is None
    assert row.requests == merged["requests"] and row.failed_requests == 0
    for key in ("rps", *LATENCY_KEYS, "lat_max_ms", "canary_p50_ms", "canary_p99_ms"):
        assert getattr(row, key) == pytest.approx(merged[key], rel=1e-5), key  # 6 digits
    meta = json.loads((results / "latest" / "run.json").read_text())
    assert meta["status"] == "complete" and meta["matrix"]["loadgens"] == 3
