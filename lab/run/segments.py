"""One cell's load split across k6 instances by execution segments, and their results merged
into one row's load columns exactly.

k6 splits a test's VUs and arrival rates between instances by `--execution-segment` (instance
i's share, e.g. 1/2:1) within `--execution-segment-sequence` (all the shares, 0,1/2,1): the
k6-operator gives each runner its segment the same way. Counts add up across instances;
percentiles do not (the average of two p95s is no p95), so every instance also writes each
request's duration with k6's CSV output (gzip: about 37 bytes a request; its cost in k6's CPU
is measured in CONTRACT.md) and the merge computes the percentiles from all the samples, with
k6's own rule (TrendSink.P: linear interpolation between the two nearest order statistics at
rank p·(n-1)). The CSV holds durations to 1 ns (6 decimals of a ms), so a merged percentile
equals the one a single k6 would have reported to that resolution."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

from lab.run import loadgen

# The sample rows the merge reads: the request durations, tagged by scenario and by whether the
# answer was an expected one (the summary's http_req_duration{scenario:main,expected_response:
# true}). Only these system tags are written: the rows stay short and the merge needs no other.
DURATION_METRIC = "http_req_duration"
SYSTEM_TAGS = ("scenario", "expected_response")
SAMPLES_SUFFIX = ".csv.gz"  # k6 gzips its CSV output when the name ends in .gz


class SamplesError(ValueError):
    """A samples file that is missing, unreadable or not k6's CSV output."""


def _fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(value)


def sequence(n: int) -> str:
    """k6's --execution-segment-sequence for n equal parts, e.g. n=2: '0,1/2,1'."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return ",".join(_fraction(Fraction(k, n)) for k in range(n + 1))


def segment(i: int, n: int) -> str:
    """Instance i's (0-based, of n) --execution-segment, e.g. i=1, n=2: '1/2:1'."""
    if not 0 <= i < n:
        raise ValueError(f"instance {i} is not one of 0..{n - 1}")
    return f"{_fraction(Fraction(i, n))}:{_fraction(Fraction(i + 1, n))}"


def output_args(samples: Path) -> list[str]:
    """The flags that make k6 write every request's duration to `samples` (k6's CSV output,
    gzipped when the name ends in .gz) with only the tags the merge reads."""
    text = str(samples)
    if "," in text or "=" in text:  # k6 would read them as csv=key=value,... options
        raise ValueError(f"a samples path may hold neither ',' nor '=': {text}")
    return ["--out", f"csv={text}", "--system-tags", ",".join(SYSTEM_TAGS)]


def k6_args(i: int, n: int, samples: Path) -> list[str]:
    """The `k6 run` flags of instance i of n: its segment, the sequence, and its per-request
    output to `samples`."""
    return [
        "--execution-segment",
        segment(i, n),
        "--execution-segment-sequence",
        sequence(n),
        *output_args(samples),
    ]


def percentile(ordered: list[float], p: float) -> float:
    """k6's Trend percentile (metrics.TrendSink.P, k6 v1.8.1) of `ordered` (sorted, not
    empty), p in 0..1: the value at rank p·(n-1), interpolated linearly between neighbours."""
    rank = p * (len(ordered) - 1)
    low, high = ordered[math.floor(rank)], ordered[math.ceil(rank)]
    return low + (high - low) * (rank - math.floor(rank))


def _open(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", newline="")
    return path.open(newline="")


def _duration_rows(path: Path) -> Iterator[tuple[str, str, float]]:
    """(scenario, expected_response, ms) of every http_req_duration row of a k6 CSV output."""
    prefix = DURATION_METRIC + ","
    try:
        with _open(path) as f:
            header = next(csv.reader([f.readline()]), [])
            try:
                at_value, at_scenario, at_expected = (
                    header.index(c) for c in ("metric_value", "scenario", "expected_response")
                )
            except ValueError:
                raise SamplesError(
                    f"{path}: not k6's CSV output with the tags {','.join(SYSTEM_TAGS)} "
                    f"(header {','.join(header)[:80]!r})"
                ) from None
            # Only the duration rows are parsed: they are 1 in 13 of the file.
            for row in csv.reader(line for line in f if line.startswith(prefix)):
                yield row[at_scenario], row[at_expected], float(row[at_value])
    except SamplesError:
        raise
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise SamplesError(f"{path}: cannot read k6's samples ({exc})") from None
    except (IndexError, ValueError) as exc:
        raise SamplesError(f"{path}: a malformed sample row ({exc})") from None


def durations(samples: list[Path]) -> tuple[list[float], list[float]]:
    """The request durations (ms) in all the files: the main scenario's successful requests
    and the canary's requests (every one, as the summary's http_req_duration{scenario:canary})."""
    main: list[float] = []
    canary: list[float] = []
    for path in samples:
        for scenario, expected, ms in _duration_rows(path):
            if scenario == "main" and expected == "true":
                main.append(ms)
            elif scenario == "canary":
                canary.append(ms)
    return main, canary


def latency(values: list[float]) -> dict[str, float | None]:
    """avg, p(50/90/95/99) and max of the durations, as k6's summary computes them (None for
    none)."""
    if not values:
        return {k: None for k in ("avg", "p50", "p90", "p95", "p99", "max")}
    ordered = sorted(values)
    return {
        "avg": math.fsum(ordered) / len(ordered),
        **{f"p{p}": percentile(ordered, p / 100) for p in (50, 90, 95, 99)},
        "max": ordered[-1],
    }


def merge(summaries: list[dict[str, Any]], samples: list[Path]) -> dict[str, Any]:
    """One cell's load columns (exactly loadgen.parse_summary's keys) from its instances'
    handleSummary JSONs and sample files: counts added, rps of them all (loadgen.rps: a closed
    loop's VUs over all their cycles, else each instance's rate added), failure reasons added,
    and the latencies of the main scenario's successful requests (and the canary's) from all
    the samples merged."""
    if not summaries:
        raise ValueError("no summaries to merge")
    parts = [loadgen.parse_summary(s) for s in summaries]
    reasons: dict[str, int] = {}
    for s in summaries:
        for reason, count in loadgen.failure_counts(s).items():
            reasons[reason] = reasons.get(reason, 0) + count
    ok = sum(p["requests"] for p in parts)
    failed = sum(p["failed_requests"] for p in parts)
    main, canary = durations(samples)
    if len(main) != ok:  # each instance writes a sample per request its summary counts
        raise SamplesError(
            f"the samples hold {len(main)} successful main requests, the summaries {ok}: "
            "a samples file is missing, doubled or from another run"
        )
    lat, can = latency(main), latency(canary)
    return {
        "requests": ok,
        "rps": loadgen.rps(summaries),
        "failed_requests": failed,
        "failed_rate": failed / (ok + failed) if ok + failed else None,
        "failures": loadgen.failures_text(reasons),
        "dropped": sum(p["dropped"] for p in parts),
        "lat_avg_ms": lat["avg"],
        "lat_p50_ms": lat["p50"],
        "lat_p90_ms": lat["p90"],
        "lat_p95_ms": lat["p95"],
        "lat_p99_ms": lat["p99"],
        "lat_max_ms": lat["max"],
        "canary_p50_ms": can["p50"],
        "canary_p99_ms": can["p99"],
    }
