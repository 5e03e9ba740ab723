"""k6/lab.js: it validates its environment against the contract at init, bundles into a
`k6 archive`, and a short real run writes the per-scenario summary the runner reads."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import ROOT, targets
from lab.proc import server
from lab.targets import UnknownChoice

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

K6 = ROOT / ".tools" / "bin" / "k6"
SCRIPT = ROOT / "k6" / "lab.js"
NOWHERE = "http://127.0.0.1:9"  # init must fail before any request is made


def k6(*args: str, env: dict[str, str] | None = None, timeout: float = 30.0, cwd: Path = ROOT):
    """Run k6 with -e KEY=VALUE for every env item (archive/inspect ignore shell variables).
    --address "" turns off k6's REST API, whose fixed port parallel k6 runs would share."""
    if not K6.is_file():
        pytest.fail(f"k6 not found at {K6}: run just setup")
    command = [str(K6), *args]
    if args[0] == "run":
        command[2:2] = ["--address", ""]
    for key, value in (env or {}).items():
        command[2:2] = ["-e", f"{key}={value}"]
    return subprocess.run(
        [*command, str(SCRIPT)],
        cwd=cwd,
        env={**os.environ, "K6_NO_USAGE_REPORT": "true"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_archive_bundles_the_contract(tmp_path: Path) -> None:
    out = tmp_path / "lab.tar"
    env = {"BASE_URL": NOWHERE, "ENDPOINT": "sync", "MS": "50"}
    done = k6("archive", "-O", str(out), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with tarfile.open(out) as tar:
        names = tar.getnames()
        meta = json.load(tar.extractfile("metadata.json"))  # type: ignore[arg-type]
    assert any(n.endswith("contract/openapi.json") for n in names), names
    assert any(n.endswith("k6/lab.js") for n in names), names
    assert set(meta["options"]["scenarios"]) == {"main", "canary"}
    assert meta["env"] == env  # -e values are stored in the archive


def test_inspect_open_model() -> None:
    env = {"BASE_URL": NOWHERE, "ENDPOINT": "cpu-pool", "N": "1000", "RATE": "7", "VUS": "3"}
    done = k6("inspect", env={**env, "CANARY_RATE": "0"})
    assert done.returncode == 0, done.stderr
    options = json.loads(done.stdout)
    assert set(options["scenarios"]) == {"main"}
    main = options["scenarios"]["main"]
    assert main["executor"] == "constant-arrival-rate"
    assert (main["rate"], main["timeUnit"]) == (7, "1s")
    assert (main["preAllocatedVUs"], main["maxVUs"]) == (3, 3)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ENDPOINT": "nope"}, ["unknown ENDPOINT nope", "sync", "cpu-pool", "upstream-seq"]),
        ({}, ["ENDPOINT is required", "-e"]),
        ({"ENDPOINT": "sync", "MS": "10001"}, ["MS=10001", "between 0 and 10000"]),
        ({"ENDPOINT": "sync", "MS": "1.5"}, ["MS=1.5 is not an integer"]),
        ({"ENDPOINT": "gather", "N": "0"}, ["N=0", "between 1 and 100"]),
        ({"ENDPOINT": "sync", "N": "3"}, ["ENDPOINT sync does not take N"]),
        ({"ENDPOINT": "hello", "MS": "3"}, ["ENDPOINT hello does not take MS"]),
        ({"ENDPOINT": "sync", "VUS": "0"}, ["VUS=0"]),
    ],
    ids=["unknown", "missing", "ms-high", "ms-float", "n-low", "n-on-sync", "ms-on-hello", "vus"],
)
def test_bad_environment_fails_at_init(env: dict[str, str], expected: list[str]) -> None:
    done = k6("run", env={"BASE_URL": NOWHERE, **env}, timeout=20)
    assert done.returncode != 0
    for text in expected:
        assert text in done.stderr, done.stderr
    assert "http_reqs" not in done.stdout  # no load was generated


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The Go target (FastAPI until go/gin exists); /sync and /hello need no upstream."""
    try:
        target = targets.find("go")
    except UnknownChoice:
        target = targets.find("fastapi")
    proc = server.target_server(target).start()
    try:
        yield proc.url
    finally:
        report = proc.stop()
        assert report.clean, f"{proc.name} left {report.leftover}"


def summary_run(tmp_path: Path, base_url: str, **env: str) -> tuple[dict[str, Any], str]:
    path = tmp_path / "summary.json"
    full = {"BASE_URL": base_url, "ENDPOINT": "sync", "MS": "50", "SUMMARY": str(path), **env}
    done = k6("run", "-q", env=full)
    assert done.returncode == 0, done.stderr
    return json.loads(path.read_text()), done.stdout


def test_closed_run_summary(tmp_path: Path, base_url: str) -> None:
    data, stdout = summary_run(tmp_path, base_url, VUS="5", DURATION="2s")
    m = data["metrics"]
    for key in (
        "http_req_duration{scenario:main}",
        "http_req_duration{scenario:canary}",
        "http_reqs{scenario:main}",
        "http_req_failed{scenario:main}",
        "iterations{scenario:main}",
        "dropped_iterations{scenario:main}",
    ):
        assert key in m, sorted(m)
    assert m["http_reqs{scenario:main}"]["values"]["count"] > 0
    assert m["http_req_failed{scenario:main}"]["values"]["rate"] == 0
    assert m["http_req_duration{scenario:main}"]["values"]["p(95)"] >= 50
    assert m["http_req_duration{scenario:canary}"]["values"]["count"] > 0
    assert m["http_req_duration{scenario:canary}"]["values"]["p(50)"] < 50  # /hello does not wait
    assert data["lab"] == {
        "endpoint": "sync",
        "path": "/sync",
        "params": {"ms": 50},
        "vus": 5,
        "rate": None,
        "duration": "2s",
        "canary_rate": 5,
        "timeout": "120s",
        "graceful_stop": "3s",
        "base_url": base_url,
    }
    assert "main" in stdout and "canary" in stdout and "p95" in stdout


def test_open_run_summary(tmp_path: Path, base_url: str) -> None:
    data, _ = summary_run(tmp_path, base_url, VUS="5", RATE="20", DURATION="3s")
    m = data["metrics"]
    reqs = m["http_reqs{scenario:main}"]["values"]
    assert 17 <= reqs["rate"] <= 22, reqs
    # Present even at zero, because a threshold names the sub-metric (absent otherwise).
    assert m["dropped_iterations{scenario:main}"]["values"]["count"] == 0
    assert data["lab"]["rate"] == 20


def test_open_run_counts_dropped_iterations(tmp_path: Path, base_url: str) -> None:
    """One VU at 20/s on 200 ms requests can start about 5/s: the rest are dropped."""
    data, _ = summary_run(tmp_path, base_url, VUS="1", RATE="20", MS="200", DURATION="2s")
    m = data["metrics"]
    assert m["dropped_iterations{scenario:main}"]["values"]["count"] >= 20
    assert m["dropped_iterations{scenario:canary}"]["values"]["count"] == 0


def test_failed_requests_are_counted_by_reason(tmp_path: Path) -> None:
    """A target whose upstream is a closed port answers 502 to /upstream; a closed port
    answers nothing. Both are failures, counted by reason, out of the successful latency."""
    closed = f"http://127.0.0.1:{server.free_port()}"
    proc = server.target_server(targets.find("go"), upstream_url=closed).start()
    try:
        bad, _ = summary_run(
            tmp_path, proc.url, ENDPOINT="upstream", MS="1", N="1", VUS="2", DURATION="1s",
            CANARY_RATE="0",
        )  # fmt: skip
    finally:
        proc.stop()
    m = bad["metrics"]
    failed = m["http_req_failed{scenario:main}"]["values"]
    assert failed["rate"] == 1 and failed["passes"] > 0
    assert m["failed_502"]["values"]["count"] == failed["passes"]
    assert m["http_req_duration{scenario:main,expected_response:true}"]["values"]["count"] == 0
    none, _ = summary_run(tmp_path, closed, VUS="1", DURATION="1s", CANARY_RATE="0")
    assert none["metrics"]["failed_network"]["values"]["count"] > 0
    assert not [k for k in none["metrics"] if k.startswith("failed_") and k != "failed_network"]
