"""Two load generators in two network namespaces (--loadgens 2 --netns), end to end: a real
gin server on the lab's bridge, two real k6 instances each in a load host of its own, one
row merged from both, and nothing of the network or the processes left. Root only (it
creates namespaces); tests/unit/test_loadgens.py and test_netns.py test the parts."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from harness.labrun import (
    LabRun,
    assert_nothing_left,
    check_meta,
    csv_rows,
    is_cell_k6,
    number,
    only_run,
    wait_for,
)

from lab import model
from lab.proc import netns
from lab.record import CellResult, to_text
from lab.run import loadgen, segments

pytestmark = [
    pytest.mark.e2e,  # the test's kind: just test-e2e
    pytest.mark.skipif(
        os.geteuid() != 0, reason="--netns creates network namespaces: root only (run as root)"
    ),
]


def _net_namespace(p: psutil.Process) -> str:
    return os.readlink(f"/proc/{p.pid}/ns/net")


def _two(found: list[psutil.Process]) -> list[psutil.Process] | None:
    return found if len(found) == 2 else None


def test_two_load_generators_in_two_namespaces_make_one_merged_row(
    tmp_path: Path, lab_run: Callable[..., LabRun]
) -> None:
    out = tmp_path / "out"
    run_ = lab_run(
        "bench", "go", "hello", "--loadgens", "2", "--netns", "--duration", "2s", "--vus", "20",
        "--out", str(out),
    )  # fmt: skip
    # each k6 of the cell runs in a load host's namespace of its own, not in ours
    k6s = wait_for("the cell's two k6", lambda: _two(run_.live(is_cell_k6)), 30, run_)
    places = {_net_namespace(p) for p in k6s}
    assert len(places) == 2 and _net_namespace(psutil.Process()) not in places, places
    code = run_.wait(timeout=60)
    assert code == 0, run_.stderr
    run = only_run(out)
    meta = check_meta(run, "complete", "gin/release", "gin")
    assert (meta["options"]["loadgens"], meta["options"]["netns"]) == (2, True)

    (row,) = csv_rows(run)
    assert row["status"] == "ok", row["error"]
    assert row["loadgens"] == "2"
    # each instance's summary and samples: the row is their merge, and both did load
    summaries = sorted(run.summaries.glob("*.json"))
    samples = [s.with_suffix(segments.SAMPLES_SUFFIX) for s in summaries]
    assert [s.name.split(".", 1)[1] for s in summaries] == ["0.json", "1.json"]
    data = [json.loads(s.read_text()) for s in summaries]
    parts = [loadgen.parse_summary(d) for d in data]
    assert all(p["requests"] > 0 for p in parts), parts
    assert all(d["lab"]["base_url"].startswith("http://10.213.") for d in data)
    merged = segments.merge(data, samples)
    assert int(row["requests"]) == sum(p["requests"] for p in parts) == merged["requests"]
    for column in ("rps", "failed_requests", "failures", "lat_p50_ms", "lat_p95_ms",
                   "lat_p99_ms", "lat_max_ms", "canary_p50_ms"):  # fmt: skip
        assert row[column] == to_text(merged[column]), column
    assert (row["failed_requests"], row["failures"]) == ("0", "")
    # k6's CPU: both instances', and their sum
    each = [float(p) for p in row["k6_cpu_pcts"].split("+")]
    assert len(each) == 2 and all(p > 0 for p in each), row["k6_cpu_pcts"]
    assert number(row, "k6_cpu_pct") == pytest.approx(sum(each), abs=1.0)
    # the links' round trip, measured and in Z; the bound's words name the load generators
    assert number(row, "rtt_ms") >= 0
    assert number(row, "overhead_ms") >= number(row, "rtt_ms")
    if row["bound"] == "loadgen":
        assert "2 load generators" in model.limit_text("loadgen", CellResult.from_csv(row))
    logs = sorted(p.name.rsplit("-", 1)[-1] for p in run.logs.iterdir())
    assert logs == ["k6.0.log", "k6.1.log", "server.log"]

    # nothing left: no process, and no namespace, veth or bridge of the lab
    assert_nothing_left(run_, out)
    assert netns.ours(netns.link_names() + netns.namespace_names(), run_.proc.pid) == []
    assert netns.leftovers(netns.link_names(), netns.namespace_names()) == {
        "links": [],
        "namespaces": [],
    }
