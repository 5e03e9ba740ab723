"""lab/run/segments.py: execution segments, the per-request output flags, and the merge of the
instances' summaries and samples (made-up sample files here; real k6 runs in
tests/e2e/test_segmented_runs.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy
import pytest
from harness.k6files import HEADER, summary, write_samples

from lab.run import segments

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, ("0,1", ["0:1"])),
        (2, ("0,1/2,1", ["0:1/2", "1/2:1"])),
        (3, ("0,1/3,2/3,1", ["0:1/3", "1/3:2/3", "2/3:1"])),
        (4, ("0,1/4,1/2,3/4,1", ["0:1/4", "1/4:1/2", "1/2:3/4", "3/4:1"])),
    ],
)
def test_sequence_and_segments(n: int, expected: tuple[str, list[str]]) -> None:
    assert (segments.sequence(n), [segments.segment(i, n) for i in range(n)]) == expected


def test_segment_out_of_range() -> None:
    with pytest.raises(ValueError):
        segments.segment(2, 2)
    with pytest.raises(ValueError):
        segments.sequence(0)


def test_k6_args(tmp_path: Path) -> None:
    out = tmp_path / "samples-1.csv.gz"
    assert segments.k6_args(1, 3, out) == [
        "--execution-segment", "1/3:2/3",
        "--execution-segment-sequence", "0,1/3,2/3,1",
        "--out", f"csv={out}",
        "--system-tags", "scenario,expected_response",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="neither"):
        segments.k6_args(0, 1, tmp_path / "a=b.csv")


def test_percentile_is_k6s_linear_interpolation() -> None:
    # rank p·(n-1): p50 of 1..4 is between 2 and 3; p95 of 0..10 is 9.5
    assert segments.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert segments.percentile([float(v) for v in range(11)], 0.95) == pytest.approx(9.5)
    assert segments.percentile([7.0], 0.99) == 7.0
    values = sorted(random.Random(1).expovariate(1) for _ in range(1001))
    for p in (0.5, 0.9, 0.95, 0.99):
        # numpy's default ("linear") is the same rule
        assert segments.percentile(values, p) == pytest.approx(numpy.percentile(values, p * 100))


def test_merge_of_a_skewed_split_is_not_the_average_of_percentiles(tmp_path: Path) -> None:
    """One instance saw a fast server (9,000 requests about 1 ms), the other a slow one (1,000
    about 100 ms): the merged p95 lies in the slow tail, where 10 % of all requests are, far
    from the average of the two instances' p95s."""
    rng = random.Random(7)
    fast = [round(rng.uniform(0.5, 1.5), 6) for _ in range(9000)]
    slow = [round(rng.uniform(90, 110), 6) for _ in range(1000)]
    files = [
        write_samples(tmp_path / "a.csv.gz", fast, canary=[0.3, 0.4]),
        write_samples(tmp_path / "b.csv", slow, canary=[0.5]),
    ]
    merged = segments.merge([summary(9000), summary(1000)], files)
    everything = sorted(fast + slow)
    for p in (50, 90, 95, 99):
        assert merged[f"lat_p{p}_ms"] == pytest.approx(segments.percentile(everything, p / 100))
    averaged = (
        segments.percentile(sorted(fast), 0.95) + segments.percentile(sorted(slow), 0.95)
    ) / 2
    assert 90 <= merged["lat_p95_ms"] <= 110 and 45 <= averaged <= 60
    assert merged["lat_p50_ms"] < 1.5 < 90 < merged["lat_p99_ms"]
    assert merged["lat_avg_ms"] == pytest.approx(sum(fast + slow) / 10000)
    assert merged["lat_max_ms"] == max(slow)
    assert merged["canary_p50_ms"] == pytest.approx(0.4)
    assert merged["canary_p99_ms"] == pytest.approx(0.498)


def test_merge_adds_counts_and_sums_throughput(tmp_path: Path) -> None:
    files = [
        write_samples(tmp_path / "a.csv", [1.0, 2.0], failed=[0.1]),
        write_samples(tmp_path / "b.csv", [3.0], failed=[0.2, 0.3]),
    ]
    parts = [
        summary(2, failed=1, seconds=2, dropped=3, s502=1),
        summary(1, failed=2, seconds=4, dropped=0, s502=1, timeout=1),
    ]
    merged = segments.merge(parts, files)
    assert merged == {
        "requests": 3,
        "rps": pytest.approx(2 / 2 + 1 / 4),  # each instance's successful requests per second
        "failed_requests": 3,
        "failed_rate": 0.5,
        "failures": "502×2, timeout×1",
        "dropped": 3,
        "lat_avg_ms": pytest.approx(2.0),  # the failed requests' durations are left out
        "lat_p50_ms": pytest.approx(2.0),
        "lat_p90_ms": pytest.approx(2.8),
        "lat_p95_ms": pytest.approx(2.9),
        "lat_p99_ms": pytest.approx(2.98),
        "lat_max_ms": 3.0,
        "canary_p50_ms": None,
        "canary_p99_ms": None,
    }
    assert set(merged) == set(segments.loadgen.parse_summary(parts[0]))


def test_merge_of_no_successful_request(tmp_path: Path) -> None:
    merged = segments.merge([summary(0, failed=4)], [write_samples(tmp_path / "a.csv", [])])
    assert merged["requests"] == 0 and merged["failed_rate"] == 1.0
    assert merged["lat_p95_ms"] is None and merged["rps"] == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "not k6's CSV output"),
        (b"a,b,c\n1,2,3\n", "not k6's CSV output"),
        (HEADER.encode() + b"http_req_duration,1,abc,true,main,,\n", "malformed"),
        (HEADER.encode() + b"http_req_duration,1\n", "malformed"),
        (b"\x1f\x8b\x08garbage", "cannot read"),
    ],
    ids=["empty", "other-csv", "not-a-number", "short-row", "bad-gzip"],
)
def test_bad_samples_file(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / ("s.csv.gz" if content.startswith(b"\x1f\x8b") else "s.csv")
    path.write_bytes(content)
    with pytest.raises(segments.SamplesError, match=expected):
        segments.merge([summary(1)], [path])


def test_missing_samples_file(tmp_path: Path) -> None:
    with pytest.raises(segments.SamplesError, match="cannot read"):
        segments.merge([summary(1)], [tmp_path / "nowhere.csv.gz"])


def test_samples_that_do_not_match_the_summaries(tmp_path: Path) -> None:
    files = [
        write_samples(tmp_path / "a.csv", [1.0, 2.0]),
        write_samples(tmp_path / "b.csv", [3.0]),
    ]
    with pytest.raises(segments.SamplesError, match="3 successful main requests, the summaries 2"):
        segments.merge([summary(1), summary(1)], files)
