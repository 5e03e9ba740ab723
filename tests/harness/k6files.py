"""k6's output files, made up for unit tests: a handleSummary JSON's parts the merge reads and
a samples file as k6's CSV output writes it (tests/unit/test_segments.py, test_ingest.py)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

HEADER = "metric_name,timestamp,metric_value,expected_response,scenario,extra_tags,metadata\n"


def write_samples(
    path: Path, main: list[float], canary: list[float] = (), failed: list[float] = ()
) -> Path:
    """A file as k6's CSV output writes it with --system-tags scenario,expected_response: each
    request's rows (4 of the 13 k6 writes), of which the merge reads http_req_duration's."""
    lines = [HEADER]
    for scenario, expected, values in (
        ("main", "true", main),
        ("canary", "true", canary),
        ("main", "false", failed),
    ):
        for ms in values:
            tags = f"{expected},{scenario},probe={scenario}&endpoint=hello,"
            lines += [
                f"http_reqs,1795778711,1.000000,{tags}\n",
                f"http_req_duration,1795778711,{ms:f},{tags}\n",
                f"http_req_waiting,1795778711,{ms / 2:f},{tags}\n",
                f"iteration_duration,1795778711,{ms + 1:f},,{scenario},endpoint=hello,\n",
            ]
    text = "".join(lines)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


LAB = {"endpoint": "hello", "params": {}, "vus": 10, "rate": None, "duration": "10s"}


def summary(
    ok: int,
    failed: int = 0,
    seconds: float = 10.0,
    dropped: int = 0,
    lab: dict[str, Any] | None = None,
    **reasons: int,
) -> dict[str, Any]:
    """The parts of a handleSummary JSON the merge reads (lat values are the instance's own),
    and lab.js's `lab` object, the cell (`ingest` reads it)."""
    total = ok + failed
    metrics: dict[str, Any] = {
        "http_reqs{scenario:main}": {"values": {"count": total, "rate": total / seconds}},
        "http_req_failed{scenario:main}": {
            "values": {"passes": failed, "fails": ok, "rate": failed / total if total else 0}
        },
        "dropped_iterations{scenario:main}": {"values": {"count": dropped}},
    }
    for reason, count in reasons.items():
        metrics[f"failed_{reason.removeprefix('s')}"] = {"values": {"count": count}}
    return {"metrics": metrics, "state": {"testRunDurationMs": seconds * 1000}, "lab": lab or LAB}
