"""lab/model.py: one fixture per limiting resource (worked out by hand), the MVA behind the
CPU stations, the open model, censoring, and the one verdict function."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lab import model
from lab.model import Demand

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def go(**capacity: int | None) -> dict[str, Any]:
    return {"language": "go", "cpus": 1, "workers": 1, "capacity": capacity}


def py(workers: int = 1, cpus: int = 1, **capacity: int | None) -> dict[str, Any]:
    return {"language": "python", "cpus": cpus, "workers": workers, "capacity": capacity}


K6_US = 60.0  # k6's CPU per request on its one CPU: 16.7 k rps at most


# --- one fixture per bound --------------------------------------------------------------


def test_slots_bound_a_thread_pool() -> None:
    # FastAPI /sync: 40 anyio tokens, S = 100 ms, d = 0.3 ms, overshoot 0.5 ms, 50 VUs
    demand = Demand(100.0, 0.3, 0.5, None, K6_US, overshoot_ms=0.5)
    p = model.predict("sleep", "sync", demand, 50, None, py(sync=40), 1)
    assert p.bound == "slots"
    assert p.rps == pytest.approx(40 / 0.1008)  # exact beyond the knee (fixed service time)
    assert p.latency_ms == pytest.approx(50 / p.rps * 1000)
    assert p.ceilings["server-cpu"] == pytest.approx(1 / 0.0003)


def test_the_round_trip_does_not_hold_a_slot() -> None:
    # flask's one sync worker on /hello: the worker is busy for its CPU (0.6 ms) only, not
    # for the client's and loopback's part of the round trip (Z = 5 ms on a loaded machine)
    demand = Demand(0.0, 0.6, 5.0, None, K6_US)
    p = model.predict("none", "hello", demand, 50, None, py(hello=1), 1)
    assert p.ceilings["slots"] == pytest.approx(1 / 0.0006)
    assert p.rps > 1000


def test_vus_bound_below_capacity() -> None:
    # Go /async, unbounded: every VU waits for its own answer
    demand = Demand(100.0, 0.1, 0.3, None, K6_US)
    p = model.predict("sleep", "async", demand, 10, None, go(**{"async": None}), 1)
    assert p.bound == "vus"
    assert "slots" not in p.ceilings
    assert p.rps == pytest.approx(10 / 0.10046, rel=2e-3)  # S + d + Z + k6


def test_server_cpu_bound_hello() -> None:
    # a Python /hello at 0.5 ms of CPU per request on one worker: 2000 rps, not k6's 16.7 k
    demand = Demand(0.0, 0.5, 0.2, None, K6_US)
    p = model.predict("none", "hello", demand, 50, None, py(workers=1, cpus=2, hello=None), 1)
    assert p.bound == "server-cpu"
    assert p.ceilings["server-cpu"] == pytest.approx(2000)  # one GIL: 1 CPU of the 2
    assert p.rps == pytest.approx(2000, rel=0.01)  # 50 VUs: deep in saturation


def test_loadgen_bound_hello() -> None:
    # Go /hello at 30 µs of server CPU: k6 (60 µs on its one CPU) is the limit
    demand = Demand(0.0, 0.03, 0.1, None, K6_US)
    p = model.predict("none", "hello", demand, 50, None, go(hello=None), 1)
    assert p.bound == "loadgen"
    assert p.loadgen_rps_max == pytest.approx(1e6 / K6_US)
    assert p.rps == pytest.approx(1e6 / K6_US, rel=0.02)


def test_upstream_cpu_bound() -> None:
    # /upstream with n=10 calls: the upstream service spends 0.4 ms per request on k6's CPU
    demand = Demand(0.0, 0.05, 0.3, 0.4, K6_US)
    p = model.predict("upstream", "upstream", demand, 100, None, go(upstream=None), 1)
    assert p.bound == "upstream-cpu"
    assert p.loadgen_rps_max == pytest.approx(1 / 0.00046)


def test_cpu_endpoint_python_one_gil_go_every_cpu() -> None:
    demand = Demand(0.0, 20.0, 0.2, None, K6_US)
    p = model.predict("cpu", "cpu", demand, 10, None, py(workers=1, cpus=2, cpu=1), 1)
    assert (p.bound, p.ceilings["server-cpu"]) == ("server-cpu", pytest.approx(50))
    p2 = model.predict("cpu", "cpu", demand, 10, None, {**go(cpu=None), "cpus": 2}, 1)
    assert p2.ceilings["server-cpu"] == pytest.approx(100)  # 2 CPUs
    assert p2.rps == pytest.approx(100, rel=0.03)
    pool = model.predict("cpu", "cpu-pool", demand, 10, None, py(2, 2, **{"cpu-pool": 4}), 1)
    assert pool.ceilings["server-cpu"] == pytest.approx(100)  # processes: no GIL limit


def test_open_rate_below_every_ceiling() -> None:
    demand = Demand(100.0, 1.0, 0.5, None, K6_US)
    p = model.predict("sleep", "blocking", demand, 50, 5, py(blocking=1), 1)
    assert (p.bound, p.rps, p.overloaded) == ("open-rate", 5.0, False)
    # S + Z + the CPU's M/M/1 residence 1 ms / (1 - 0.005) + k6's 60 µs / (1 - 0.0003)
    assert p.latency_ms == pytest.approx(100 + 0.5 + 1 / 0.995 + 0.06 / 0.9997, rel=1e-4)


def test_open_rate_above_a_ceiling_is_overloaded() -> None:
    demand = Demand(100.0, 1.0, 0.5, None, K6_US)
    p = model.predict("sleep", "blocking", demand, 50, 50, py(blocking=1), 1)
    assert p.overloaded and p.bound == "slots"
    assert p.rps == pytest.approx(1 / 0.101)  # S + d: no overshoot measured
    assert p.latency_ms is None


@pytest.mark.parametrize(
    ("kind", "demand", "info"),
    [
        ("meta", Demand(0.0, 1.0), go()),  # /health, /info: not benchmarked
        ("cpu", Demand(0.0, None), go(cpu=None)),  # CPU work, its CPU not measured
        ("none", Demand(0.0), go(hello=None)),  # /hello with nothing measured (--url)
        ("sleep", Demand(100.0, 1.0), {}),  # no /info
    ],
)
def test_no_model(kind: str, demand: Demand, info: dict[str, Any]) -> None:
    assert model.predict(kind, "x", demand, 10, None, info, 1) == model.NO_MODEL


# --- the CPU stations: mean-value analysis ----------------------------------------------


def test_mva_ends() -> None:
    x, (u,) = model.mva(1, 0.1, [(0.002, 1)])
    assert x == pytest.approx(1 / 0.102)  # one customer: no queueing
    x, (u,) = model.mva(500, 0.1, [(0.002, 1)])
    assert x == pytest.approx(500, rel=1e-3) and u == pytest.approx(1, rel=1e-3)
    x, _ = model.mva(500, 0.1, [(0.002, 2)])  # two CPUs (Seidmann)
    assert x == pytest.approx(1000, rel=1e-3)


def test_mva_queues_at_the_knee() -> None:
    # An HTTP client's 1.8 ms per request with 50 VUs of 100 ms: the asymptotic bound says
    # min(50 / 0.1018, 1 / 0.0018) = 491, but the CPU queues near saturation: MVA is lower
    demand = Demand(100.0, 1.8, 0.0, None, None)
    p = model.predict("upstream", "upstream", demand, 50, None, py(upstream=None), 1)
    assert p.bound == "vus"
    assert p.rps < 0.95 * p.ceilings["vus"]  # 463: 6 % below the bound, outside the band
    x_exact, _ = model.mva(50, 0.1, [(0.0018, 1)])
    assert p.rps == pytest.approx(x_exact)


# --- cells that measure what they claim ---------------------------------------------------


def test_planned_duration() -> None:
    assert model.planned_duration_s(5.0, 100.0) == (5.0, "")
    assert model.planned_duration_s(5.0, None) == (5.0, "")
    # 4 rps: 10 s would do, 20 s plans for twice the minimum (a slower server still counts)
    assert model.planned_duration_s(5.0, 4.0) == (20, "")
    # flask /sequential: 1 rps -> the 60 s cap, 60 requests: enough
    assert model.planned_duration_s(5.0, 1.0) == (60, "")
    seconds, why = model.planned_duration_s(5.0, 0.5)
    assert seconds == model.MAX_CELL_S
    assert "30 < 40 requests" in why


def test_too_few() -> None:
    assert model.too_few(40) == ""
    assert "only 7 requests" in model.too_few(7)
    assert model.too_few(None) == ""


# --- the one verdict --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "eff", "censored", "expected"),
    [
        ("ok", 1.0, "", "as predicted"),
        ("ok", 0.95, "", "as predicted"),
        ("ok", 1.05, "", "as predicted"),
        ("ok", 0.94, "", "below model"),
        ("ok", 1.06, "", "above model"),
        ("ok", None, "", "no model"),
        ("ok", 0.5, "only 7 requests", "censored"),
        ("error", 1.0, "", "error"),  # a failed cell gets no model verdict
        ("error", None, "x", "error"),
    ],
)
def test_verdict(status: str, eff: float | None, censored: str, expected: str) -> None:
    assert model.verdict(status, eff, censored) == expected


def test_efficiency() -> None:
    assert model.efficiency(50.0, 100.0) == pytest.approx(0.5)
    assert model.efficiency(None, 100.0) is None
    assert model.efficiency(0.0, 100.0) is None
    assert model.efficiency(50.0, None) is None


def test_tolerance_is_five_percent() -> None:
    assert model.TOLERANCE == 0.05
    assert 1 / model.MIN_REQUESTS <= model.TOLERANCE / 2  # counting error: half the band
    assert math.isfinite(model.MAX_CELL_S)


def test_limit_text_names_the_resource_and_its_number() -> None:
    from lab.record import CellResult

    row = CellResult(server_cpu_ms=104.0, loadgen_us=120.0, loadgen_rps_max=8000.0)
    assert model.limit_text("server-cpu", row) == "server CPU 104 ms/request"
    assert model.limit_text("loadgen", row) == "k6 120 µs/request → 8,000 rps max"
    assert model.limit_text("server-cpu", CellResult(server_cpu_ms=0.5)) == (
        "server CPU 0.5 ms/request"
    )


def test_a_miss_shows_what_the_load_saw_of_its_bound() -> None:
    """Beside a miss, the limiting resource as the load used it, in the prediction's terms
    (utilisation and Little's laws); nothing beside a cell as predicted."""
    from lab.record import CellResult

    cpu = CellResult(server_cpu_ms=1.72, rps=475.0, server_cpu_pct=97.85, efficiency=0.83)
    assert model.limit_text("server-cpu", cpu) == (
        "server CPU 1.72 ms/request · under the load: 2.06 ms/request"
    )
    assert model.limit_text("server-cpu", CellResult(server_cpu_ms=1.72, rps=475.0,
                            server_cpu_pct=97.85, efficiency=0.97)) == (
        "server CPU 1.72 ms/request"
    )  # fmt: skip
    slots = CellResult(capacity=1, service_ms=100.0, rps=7.9, efficiency=0.78)
    assert model.observed("slots", slots) == "each slot held 127 ms/request"
    vus = CellResult(vus=100, rps=810.0, lat_avg_ms=123.4, predicted_latency_ms=106.2)
    assert model.observed("vus", vus) == "a request took 123 ms (predicted 106 ms)"
    k6 = CellResult(rps=9000.0, k6_cpu_pct=90.0)
    assert model.observed("loadgen", k6) == "k6 90 % of a CPU busy, 100 µs/request"
    up = CellResult(rps=800.0, upstream_cpu_pct=40.0)
    assert model.observed("upstream-cpu", up) == "0.5 ms/request"
    assert model.observed("server-cpu", CellResult(rps=None, server_cpu_pct=50.0)) == ""
    assert model.observed("server-cpu", CellResult(rps=10.0)) == ""  # not sampled


# --- the calibration's requests (lab/run/calibrate.py) and the warm-up before them ------------


def _cell(endpoint: str, vus: int = 50, **params: int) -> Any:
    from lab.matrix import Cell

    return Cell("gin", "release", endpoint, tuple(params.items()), vus, None, "3s", 1)


def test_cpu_is_measured_with_short_waits_not_none() -> None:
    # A wait's wake-up costs CPU that ms=0 never pays (gin /upstream?n=10: 0.46-0.50 ms per
    # request with ms=0, 0.87 with 10 ms waits, 0.86 under the load): waits of min(ms, 10).
    from lab.contract import load
    from lab.run import calibrate

    upstream, sequential, hello = (load()[e] for e in ("upstream", "sequential", "hello"))
    assert calibrate.cpu_query(upstream, _cell("upstream", ms=100, n=10)) == (
        "/upstream?ms=10&n=10"
    )
    assert calibrate.cpu_query(sequential, _cell("sequential", ms=3, n=4)) == (
        "/sequential?ms=3&n=4"
    )
    assert calibrate.cpu_query(hello, _cell("hello")) == "/hello"
    # the round trip's "bare" request still has no wait (the overshoot is measured against it)
    assert calibrate.calibration_query(upstream, _cell("upstream", ms=100, n=10)) == (
        "/upstream?ms=0&n=10"
    )


def test_warm_up_opens_the_upstream_connections_the_load_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # N VUs x n calls at once for a fan-out; calls one after another need one connection each.
    from lab.contract import load
    from lab.run import runner

    seen: list[str] = []
    monkeypatch.setattr(runner.server, "get_json", lambda url, timeout: seen.append(url))
    contract = load()
    runner.warm_up("http://h", contract["upstream"], _cell("upstream", 50, ms=100, n=10))
    assert seen == ["http://h/upstream?ms=10&n=10"] * 50
    seen.clear()
    runner.warm_up("http://h", contract["upstream-seq"], _cell("upstream-seq", 100, ms=100, n=10))
    assert seen == ["http://h/upstream-seq?ms=10&n=1"] * 100
    seen.clear()
    runner.warm_up("http://h", contract["async"], _cell("async", 50, ms=100))
    assert seen == ["http://h/async?ms=1"] * 16  # other endpoints: as before
    # which endpoints make their n calls (or waits) at once is the contract's service
    concurrent = {e.name for e in contract.endpoints if e.concurrent}
    assert concurrent == {"gather", "upstream"}


def test_k6_cost_where_k6_binds_is_its_cpus_over_its_top_rate() -> None:
    from lab.run import calibrate

    # k6 at 88 % of its one CPU (its Go runtime never reaches 100 %) doing 10,000 rps: its
    # ceiling is those 10,000, not the 11,364 its CPU time per request (88 µs) would predict
    assert calibrate.k6_cost_us(88.0, 10_000.0, 1) == (100.0, "its CPUs over its top rate")
    # not the bottleneck (the server was): its CPU time per request
    assert calibrate.k6_cost_us(40.0, 5_000.0, 1) == (80.0, "its CPU time per request")
    assert calibrate.k6_cost_us(120.0, 10_000.0, 2)[1] == "its CPU time per request"


def test_k6_is_calibrated_once_per_vu_count(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from lab.run import calibrate, runner
    from lab.rundir import RunDir

    calls: list[int] = []

    def measure(k6: Any, srv: Any, folder: Any, vus: int) -> calibrate.LoadgenCost:
        calls.append(vus)
        return calibrate.LoadgenCost(100.0 + vus, None, 1, "measured: stub", vus)

    monkeypatch.setattr(calibrate, "loadgen_cost", measure)
    r = runner.Runner(RunDir.create(tmp_path), runner.Options(pin=False))
    costs = [r.loadgen_cost(v).us_per_request for v in (50, 100, 50, 50, 100)]
    assert costs == [150.0, 200.0, 150.0, 150.0, 200.0]
    assert calls == [50, 100]


def test_cell_query() -> None:
    from lab.matrix import Cell

    cell = Cell("gin", "release", "upstream", (("ms", 100), ("n", 10)), 50, None, "3s", 1)
    assert cell.query() == "?ms=100&n=10"
    assert cell.query(ms=10, x=3) == "?ms=10&n=10"  # a parameter the cell lacks is ignored
    assert Cell("gin", "release", "hello", (), 50, None, "3s", 1).query(ms=1) == ""
