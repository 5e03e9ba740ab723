"""lab/run/loadgen.py: the k6 summary -> row columns, and k6's environment. (The model's tests
are in test_model.py.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from harness.labrun import k6_inspect

from lab.matrix import Cell
from lab.run import loadgen

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

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


def with_failed(rate: float, passes: int, fails: int) -> dict[str, Any]:
    """SUMMARY with other values of http_req_failed (a failed request counts as a pass)."""
    data = copy.deepcopy(SUMMARY)
    values = {"rate": rate, "passes": passes, "fails": fails}
    data["metrics"]["http_req_failed{scenario:main}"]["values"] = values
    return data


def test_parse_summary_failed_rate() -> None:
    row = loadgen.parse_summary(with_failed(rate=0.25, passes=40, fails=121))
    assert row["failed_rate"] == 0.25
    # throughput and requests count the successful ones only
    assert (row["requests"], row["failed_requests"]) == (121, 40)
    assert row["rps"] == pytest.approx(78.81118868994083 * 121 / 161)


def test_parse_summary_names_the_failures() -> None:
    data = with_failed(rate=0.1, passes=16, fails=145)
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


def closed_loop(
    count: int, seconds: float, cycles: int, cycle_ms: float, vus: int = 50, failed: int = 0, **lab
) -> dict[str, Any]:
    """A closed loop's summary: k6's count over its run time, and lab.js's cycle counters."""

    def counter(n: float) -> dict[str, Any]:
        return {"values": {"count": n, "rate": n / seconds}}

    return {
        "lab": {"vus": 50, "rate": None, **lab},
        "metrics": {
            "http_reqs{scenario:main}": counter(count),
            "http_req_failed{scenario:main}": {
                "values": {"passes": failed, "rate": failed / count}
            },
            "lab_cycling_vus": counter(vus),
            "lab_cycles": counter(cycles),
            "lab_cycle_ms": counter(cycle_ms),
        },
    }


def test_a_closed_loops_rate_is_its_vus_over_their_mean_cycle() -> None:
    """50 VUs whose cycles average 102 ms serve 490 a second, whatever k6's count over its run
    time says (976 in 2.10 s, 465: the start and the last round's stragglers)."""
    data = closed_loop(976, 2.10, cycles=926, cycle_ms=926 * 102.0)
    assert loadgen.parse_summary(data)["rps"] == pytest.approx(50 / 0.102)
    k6 = data["metrics"]["http_reqs{scenario:main}"]["values"]["rate"]
    assert k6 == pytest.approx(464.8, abs=0.1)
    # failed requests never count: a quarter of them failed, a quarter of the rate goes
    failing = closed_loop(976, 2.10, cycles=926, cycle_ms=926 * 102.0, failed=244)
    assert loadgen.parse_summary(failing)["rps"] == pytest.approx(50 / 0.102 * 0.75)


@pytest.mark.parametrize(
    ("why", "data"),
    [
        ("an open model: the rate is the arrivals'", closed_loop(976, 2.1, 926, 94452, rate=500)),
        ("a burst", closed_loop(976, 2.1, 926, 94452, iterations=1)),
        ("fewer than 2 cycles a VU", closed_loop(976, 2.1, 99, 94452)),
        ("no VU cycled", closed_loop(976, 2.1, 926, 94452, vus=0)),
        ("an older lab.js: no cycles", {**SUMMARY, "lab": {"vus": 4, "rate": None}}),
    ],
)
def test_k6s_rate_stands_where_the_cycles_cannot_say(why: str, data: dict[str, Any]) -> None:
    k6 = data["metrics"]["http_reqs{scenario:main}"]["values"]["rate"]
    assert loadgen.closed_loop_rps([data]) is None, why
    assert loadgen.parse_summary(data)["rps"] == pytest.approx(k6), why


def queue(
    cycles: int, cycle_ms: float, took: tuple[float, float] = (101.0, 510.0)
) -> dict[str, Any]:
    """Spring's /db as it ran (50 VUs on 10 pooled connections, 100 ms each, 2 s; quick run
    20261129-124608): 240 answers in 2.51 s, its fastest and median answer `took` (ms)."""
    data = closed_loop(240, 2.51, cycles, cycle_ms)
    fastest, median = took
    data["metrics"]["http_req_duration{scenario:main}"] = {
        "values": {"min": fastest, "med": median}
    }
    return data


def test_a_queue_of_few_cycles_a_vu_is_read_by_k6s_count() -> None:
    """Its 190 cycles of 481 ms on average said 103.9 a second where ten connections serve 100
    at most: they leave out each VU's first answer, the queue's first round, and its pool served
    waiters out of order (its longest waits cut from the cycles); k6's count over its run time,
    95.6, is the pool's, busy from the first request to the last answer."""
    data = queue(cycles=190, cycle_ms=91_393.0)
    assert loadgen.queued([data])
    assert loadgen.closed_loop_rps([data]) is None
    assert loadgen.parse_summary(data)["rps"] == pytest.approx(240 / 2.51)


@pytest.mark.parametrize(
    ("why", "data"),
    [
        ("not a queue: each answer in its own wait", queue(190, 91_393.0, took=(101.0, 150.0))),
        ("10 cycles a VU: the first answer weighs little", queue(500, 500 * 481.0)),
    ],
)
def test_where_the_cycles_still_say(why: str, data: dict[str, Any]) -> None:
    assert loadgen.parse_summary(data)["rps"] == pytest.approx(50 * 1000 / 481.0, rel=0.01), why


def test_a_split_closed_loops_rate_is_all_its_vus_over_all_their_cycles() -> None:
    """Two instances running segments (30 and 20 VUs) of one loop: each one's rate counts its
    own cycling VUs; the cell's is all 50 over all the cycles, not 50 over each one's."""
    a = closed_loop(600, 2.1, cycles=570, cycle_ms=570 * 100.0, vus=30)
    b = closed_loop(380, 2.1, cycles=380, cycle_ms=380 * 100.0, vus=20)
    assert loadgen.rps([a]) == pytest.approx(300) and loadgen.rps([b]) == pytest.approx(200)
    assert loadgen.rps([a, b]) == pytest.approx(500)


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
    done = k6_inspect(env)
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


def test_a_matrix_grace_reaches_k6(tmp_path: Path, clean_shell: None) -> None:
    """quick.toml's graceful_stop: k6 lets the requests in flight finish for that long."""
    c = cell("sync", (("ms", 100),))
    env = loadgen.environment(c, "http://127.0.0.1:9", tmp_path / "s.json", 5, 1.0)
    assert env["GRACEFUL_STOP"] == "1000ms"
    scenarios = json.loads(k6_inspect(env).stdout)["scenarios"]
    assert {s["gracefulStop"] for s in scenarios.values()} == {"1s"}
    assert "GRACEFUL_STOP" not in loadgen.environment(c, "http://x", tmp_path / "s.json", 5)


def test_lab_js_reads_a_closed_loops_rate_by_the_runners_rules() -> None:
    """lab.js's summary line mirrors closed_loop_rps (its own text only): the same numbers."""
    script = loadgen.SCRIPT.read_text()
    rule = script[script.index("function closedLoopRate") :]
    rule = rule[: rule.index("\n}\n")]
    assert f"cycles < {loadgen.MIN_CYCLES_PER_VU} * vus" in rule, rule
    assert f"cycles < {loadgen.QUEUE_CYCLES_PER_VU} * vus" in rule, rule
    assert f"took.med >= {loadgen.QUEUED:g} * took.min" in rule, rule
