"""lab/loadgen.py (the k6 summary -> row columns, k6's environment) and lab/model.py (the
capacity model's predictions and verdicts)."""

from __future__ import annotations

import copy
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab import ROOT, loadgen, model
from lab.matrix import Cell

FIXTURE = Path(__file__).parent / "fixtures" / "k6-summary.json"
# /sequential?ms=20&n=2 on gin, open model at 100/s with 4 VUs (so some iterations dropped)
SUMMARY: dict[str, Any] = json.loads(FIXTURE.read_text())


def cell(endpoint: str = "sync", params=(("ms", 100),), rate: int | None = None) -> Cell:
    return Cell("gin", "release", endpoint, tuple(params), 10, rate, "2s", 1)


# --- parse_summary -----------------------------------------------------------------------


def test_parse_summary_reads_the_main_scenario() -> None:
    row = loadgen.parse_summary(SUMMARY)
    assert row == {
        "requests": 161,
        "rps": pytest.approx(78.81118868994083),
        "failed_requests": 0,
        "failed_rate": 0,
        "failures": "",
        "dropped": 40,
        "lat_avg_ms": pytest.approx(42.2977478074534),
        "lat_p50_ms": pytest.approx(41.99707),
        "lat_p90_ms": pytest.approx(43.462867),
        "lat_p95_ms": pytest.approx(45.360086),
        "lat_p99_ms": pytest.approx(48.3763284),
        "lat_max_ms": pytest.approx(48.557491),
        "canary_p50_ms": pytest.approx(0.323944),
        "canary_p99_ms": pytest.approx(6.308860100000002),
    }
    # the whole-test metrics (main + canary) are not what the row reports
    overall = SUMMARY["metrics"]["http_reqs"]["values"]["count"]
    assert overall != row["requests"]
    assert isinstance(row["requests"], int) and isinstance(row["dropped"], int)


def test_parse_summary_without_drops_or_canary() -> None:
    data = copy.deepcopy(SUMMARY)
    for key in ("dropped_iterations{scenario:main}", "dropped_iterations"):
        del data["metrics"][key]
    for key in list(data["metrics"]):
        if "scenario:canary" in key:
            del data["metrics"][key]
    row = loadgen.parse_summary(data)
    assert row["dropped"] == 0
    assert row["canary_p50_ms"] is None
    assert row["canary_p99_ms"] is None
    assert row["requests"] == 161


def test_parse_summary_of_nothing() -> None:
    row = loadgen.parse_summary({})
    assert row["requests"] == 0
    assert row["dropped"] == 0
    assert row["rps"] is None
    assert row["lat_p95_ms"] is None


def test_parse_summary_failed_rate() -> None:
    data = copy.deepcopy(SUMMARY)
    data["metrics"]["http_req_failed{scenario:main}"]["values"] = {
        "rate": 0.25,
        "passes": 40,
        "fails": 121,
    }
    row = loadgen.parse_summary(data)
    assert row["failed_rate"] == 0.25
    # throughput and requests count the successful ones only
    assert (row["requests"], row["failed_requests"]) == (121, 40)
    assert row["rps"] == pytest.approx(78.81118868994083 * 121 / 161)


def test_parse_summary_names_the_failures() -> None:
    data = copy.deepcopy(SUMMARY)
    data["metrics"]["http_req_failed{scenario:main}"]["values"] = {
        "rate": 0.1,
        "passes": 16,
        "fails": 145,
    }
    for name, count in (("failed_502", 13), ("failed_timeout", 2), ("failed_network", 1)):
        data["metrics"][name] = {"type": "counter", "values": {"count": count, "rate": 1.0}}
    row = loadgen.parse_summary(data)
    assert row["failures"] == "502×13, timeout×2, no answer×1"
    assert row["failed_requests"] == 16


def test_parse_summary_latency_of_successful_requests() -> None:
    data = copy.deepcopy(SUMMARY)
    ok = {"avg": 50.0, "p(50)": 49.0, "p(90)": 55.0, "p(95)": 56.0, "p(99)": 60.0, "max": 61.0}
    data["metrics"]["http_req_duration{scenario:main,expected_response:true}"] = {"values": ok}
    row = loadgen.parse_summary(data)
    assert (row["lat_avg_ms"], row["lat_p95_ms"], row["lat_max_ms"]) == (50.0, 56.0, 61.0)


def test_read_summary(tmp_path: Path) -> None:
    assert loadgen.read_summary(FIXTURE) == SUMMARY
    assert loadgen.read_summary(tmp_path / "missing.json") is None
    broken = tmp_path / "broken.json"
    broken.write_text('{"metrics": {')  # k6 killed while writing
    assert loadgen.read_summary(broken) is None


# --- environment -------------------------------------------------------------------------

# what lab.js reads besides the variables the runner always sets
K6_NAMES = ("RATE", "MS", "N", "TIMEOUT", "GRACEFUL_STOP")


@pytest.fixture
def clean_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks below must not depend on the shell the tests run in."""
    for name in K6_NAMES:
        monkeypatch.delenv(name, raising=False)


def test_environment_closed_model(tmp_path: Path, clean_shell: None) -> None:
    c = cell("gather", (("ms", 20), ("n", 3)))
    env = loadgen.environment(c, "http://127.0.0.1:1234", tmp_path / "s.json", 5)
    assert env["BASE_URL"] == "http://127.0.0.1:1234"
    assert env["ENDPOINT"] == "gather"
    assert (env["MS"], env["N"]) == ("20", "3")
    assert "ms" not in env and "n" not in env
    assert env["VUS"] == "10"
    assert env["DURATION"] == "2s"
    assert env["CANARY_RATE"] == "5"
    assert env["SUMMARY"] == str(tmp_path / "s.json")
    assert env["K6_NO_USAGE_REPORT"] == "true"
    assert "RATE" not in env


def test_environment_open_model(tmp_path: Path) -> None:
    env = loadgen.environment(cell(rate=40), "http://x", tmp_path / "s.json", 0)
    assert env["RATE"] == "40"
    assert env["CANARY_RATE"] == "0"
    assert env["MS"] == "100"


def test_environment_without_params(tmp_path: Path, clean_shell: None) -> None:
    env = loadgen.environment(cell("hello", ()), "http://x", tmp_path / "s.json", 5)
    assert env["ENDPOINT"] == "hello"
    assert "MS" not in env and "N" not in env


def test_environment_ignores_the_callers_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell = {"RATE": "7", "N": "3", "MS": "1", "TIMEOUT": "1s", "GRACEFUL_STOP": "0s"}
    for name, value in shell.items():
        monkeypatch.setenv(name, value)
    env = loadgen.environment(cell("sync", (("ms", 100),)), "http://x", tmp_path / "s", 5)
    assert env["MS"] == "100"  # the cell's own value wins
    leaked = {k: env[k] for k in ("RATE", "N", "TIMEOUT", "GRACEFUL_STOP") if k in env}
    assert not leaked


@pytest.mark.parametrize("rate", [None, 7])
def test_environment_is_what_lab_js_accepts(
    tmp_path: Path, rate: int | None, clean_shell: None
) -> None:
    """k6 itself reads the environment (inspect runs the script's init, no requests)."""
    c = Cell("gin", "release", "upstream-seq", (("ms", 20), ("n", 3)), 4, rate, "3s", 1)
    env = loadgen.environment(c, "http://127.0.0.1:9", tmp_path / "s.json", 2)
    done = subprocess.run(
        [loadgen.binary(), "inspect", "--include-system-env-vars", str(loadgen.SCRIPT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    scenarios = json.loads(done.stdout)["scenarios"]
    assert set(scenarios) == {"main", "canary"}
    main = scenarios["main"]
    if rate:
        assert main["executor"] == "constant-arrival-rate"
        assert (main["rate"], main["maxVUs"], main["duration"]) == (7, 4, "3s")
    else:
        assert main["executor"] == "constant-vus"
        assert (main["vus"], main["duration"]) == (4, "3s")
    assert scenarios["canary"]["rate"] == 2


# --- model.predict -----------------------------------------------------------------------


def info(**capacity: int | None) -> dict[str, Any]:
    return {"language": "go", "cpus": 2, "workers": 1, "capacity": capacity}


def test_closed_model_below_capacity() -> None:
    p = model.predict("sleep", "sync", 100.0, 10, None, info(sync=40))
    assert p.rps == pytest.approx(100.0)  # 10 VUs / 0.1 s
    assert p.latency_ms == pytest.approx(100.0)
    assert p.slots == 40
    assert p.service_ms == 100.0
    assert not p.overloaded


def test_closed_model_queues_beyond_capacity() -> None:
    p = model.predict("sleep", "sync", 100.0, 50, None, info(sync=40))
    assert p.rps == pytest.approx(400.0)  # min(50, 40) / 0.1 s
    assert p.latency_ms == pytest.approx(125.0)  # 50 / 400 per s
    assert not p.overloaded


def test_closed_model_unbounded_capacity() -> None:
    p = model.predict("sleep", "async", 100.0, 200, None, info(**{"async": None}))
    assert p.slots == math.inf
    assert p.rps == pytest.approx(2000.0)
    assert p.latency_ms == pytest.approx(100.0)


def test_sequential_and_upstream_use_the_given_service_time() -> None:
    p = model.predict("upstream", "upstream-seq", 200.0, 4, None, info(**{"upstream-seq": 2}))
    assert p.rps == pytest.approx(10.0)
    assert p.latency_ms == pytest.approx(400.0)


def test_open_model_below_saturation() -> None:
    p = model.predict("sleep", "blocking", 100.0, 50, 5, info(blocking=1))
    assert p.rps == pytest.approx(5.0)
    assert p.latency_ms == pytest.approx(100.0)
    assert not p.overloaded
    at_ceiling = model.predict("sleep", "blocking", 100.0, 50, 10, info(blocking=1))
    assert (at_ceiling.rps, at_ceiling.overloaded) == (pytest.approx(10.0), False)


def test_open_model_above_saturation_is_overloaded() -> None:
    p = model.predict("sleep", "blocking", 100.0, 50, 50, info(blocking=1))
    assert p.overloaded
    assert p.rps == pytest.approx(10.0)  # what one slot can serve
    assert p.latency_ms is None  # grows without bound


def test_open_model_unbounded_never_overloads() -> None:
    p = model.predict("sleep", "async", 100.0, 50, 100_000, info(**{"async": None}))
    assert not p.overloaded
    assert p.rps == 100_000


def test_cpu_slots_are_capped_by_cpus() -> None:
    go = {"language": "go", "cpus": 2, "workers": 1, "capacity": {"cpu": None, "cpu-pool": 2}}
    assert model.parallel_slots("cpu", "cpu", go) == 2
    assert model.parallel_slots("cpu", "cpu-pool", {**go, "capacity": {"cpu-pool": 8}}) == 2
    p = model.predict("cpu", "cpu", 10.0, 50, None, go)
    assert p.rps == pytest.approx(200.0)
    assert p.latency_ms == pytest.approx(250.0)
    assert model.parallel_slots("cpu", "cpu", {"capacity": {}}) == 1  # cpus unknown: one


def test_cpu_python_gil_rule() -> None:
    py = {"language": "python", "cpus": 2, "workers": 1, "capacity": {"cpu": 40, "cpu-pool": 2}}
    assert model.parallel_slots("cpu", "cpu", py) == 1  # one GIL in one worker
    assert model.parallel_slots("cpu", "cpu", {**py, "workers": 2}) == 2
    assert model.parallel_slots("cpu", "cpu", {**py, "workers": 4}) == 2  # still 2 CPUs
    assert model.parallel_slots("cpu", "cpu-pool", py) == 2  # processes: no GIL limit
    p = model.predict("cpu", "cpu", 20.0, 10, None, py)
    assert p.rps == pytest.approx(50.0)
    # a sleep endpoint in a Python target is not held by the GIL
    assert model.parallel_slots("sleep", "sync", {**py, "capacity": {"sync": 40}}) == 40


@pytest.mark.parametrize(
    ("kind", "service_ms", "info_"),
    [
        ("none", 0.0, info(hello=None)),  # hello: no model
        ("meta", 1.0, info()),
        ("sleep", 0.0, info(sync=1)),  # ms=0: nothing to predict from
        ("cpu", None, info(cpu=1)),  # not calibrated
        ("sleep", 100.0, {}),  # no /info
    ],
)
def test_no_prediction(kind: str, service_ms: float | None, info_: dict[str, Any]) -> None:
    p = model.predict(kind, "sync", service_ms, 10, None, info_)
    assert (p.rps, p.latency_ms, p.slots) == (None, None, None)
    assert p.service_ms == service_ms


# --- model.verdict / efficiency ----------------------------------------------------------


@pytest.mark.parametrize(
    ("eff", "bound", "expected"),
    [
        (1.0, False, "as predicted"),
        (0.9, False, "as predicted"),
        (1.1, False, "as predicted"),
        (0.89, False, "below model"),
        (1.11, False, "above model"),
        (None, False, "no model"),
        (0.5, True, "loadgen-bound"),
        (None, True, "loadgen-bound"),
        (0.95, True, "as predicted"),  # k6 busy, but the server met the model anyway
        (1.5, True, "above model"),
    ],
)
def test_verdict(eff: float | None, bound: bool, expected: str) -> None:
    assert model.verdict(eff, bound) == expected


@pytest.mark.parametrize(
    ("eff", "loadgen", "server", "expected"),
    [
        (0.56, False, True, "server-cpu-bound"),  # Python fan-out to the upstream on one core
        (0.95, False, True, "as predicted"),  # busy, but met the model
        (1.3, False, True, "above model"),
        (0.5, True, True, "loadgen-bound"),  # the load generator is named first
        (None, False, True, "no model"),
    ],
)
def test_verdict_server_cpu_bound(
    eff: float | None, loadgen: bool, server: bool, expected: str
) -> None:
    assert model.verdict(eff, loadgen, server) == expected


def test_efficiency() -> None:
    assert model.efficiency(50.0, 100.0) == pytest.approx(0.5)
    assert model.efficiency(None, 100.0) is None
    assert model.efficiency(0.0, 100.0) is None
    assert model.efficiency(50.0, None) is None
