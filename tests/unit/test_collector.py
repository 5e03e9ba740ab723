"""The collector's timer (labkit.collector, /info's collector) and the runner's reading of it
(lab.run.collector): a share of the server's CPU around the calibration and the load, never
an input of the model."""

from __future__ import annotations

import gc

import pytest

from lab.run import collector
from lab.run.collector import Reading
from labkit import collector as timer

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# A server whose /info states a collector of 0.25 s (argv[2]: 'none' states none).
STATES = r"""
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = {"endpoint": "info", "pid": os.getpid()}
        if sys.argv[2] != "none":
            body["collector"] = {"collections": [3, 1, 0], "seconds": 0.25}
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_the_timer_counts_each_collection_and_its_time() -> None:
    timer.install()
    timer.install()  # once: a second install does not count twice
    before = timer.totals()
    gc.collect(0)
    gc.collect()
    after = timer.totals()
    assert after["collections"][0] == before["collections"][0] + 1
    assert after["collections"][2] == before["collections"][2] + 1
    assert after["seconds"] > before["seconds"]
    # two collections' squares: above nothing, at most their sum squared
    squares = after["seconds_squared"] - before["seconds_squared"]
    assert 0 < squares <= (after["seconds"] - before["seconds"]) ** 2 + 1e-9


def test_a_reading_is_the_answering_process_beside_its_tree() -> None:
    from harness.support import script_server

    with script_server(STATES, "states", ready="/info") as (base, pid):
        reading = collector.read(base, pid)
        assert reading is not None
        assert (reading.pid, reading.seconds) == (pid, 0.25)
        assert reading.cpu[1] > 0  # the server's own CPU, read beside it
        assert collector.read(base, None) is None  # no local server: no tree to read
    with script_server(STATES, "none", ready="/info") as (base, pid):
        assert collector.read(base, pid) is None  # a server that does not time it
    assert collector.read(base, pid) is None  # gone: no answer, no reading


@pytest.mark.parametrize(
    ("after", "share"),
    [
        (Reading(7, 0.4, (2.0, 2.0)), 30.0),  # 0.3 s of 1 s of the tree's CPU
        (Reading(8, 0.4, (2.0, 2.0)), None),  # another worker answered: not its collector
        (Reading(7, 0.05, (2.0, 2.0)), None),  # counts went back: not one process's
        (Reading(7, 0.4, (1.0, 1.0)), None),  # no CPU used meanwhile
        (Reading(7, 5.0, (2.0, 2.0)), 100.0),  # never more than the whole
    ],
)
def test_the_share_between_two_readings(after: Reading, share: float | None) -> None:
    before = Reading(7, 0.1, (1.0, 1.0))
    assert collector.share_pct(before, after) == share
    assert collector.share_pct(None, after) is None


def test_the_wait_a_random_moment_met_from_its_pauses() -> None:
    """Two pauses of 60 ms in 2 s: a moment falls in one 6 % of the time and waits half of it
    then, 1.8 ms on average: sum(p^2) / (2 T)."""
    before = Reading(7, 0.1, (1.0, 1.0), squares=0.0)
    after = Reading(7, 0.22, (2.0, 2.0), squares=2 * 0.060**2)
    assert collector.pause_wait_ms(before, after, 2.0) == pytest.approx(1.8)
    assert collector.pause_wait_ms(before, Reading(8, 0.22, (2.0, 2.0), 0.0072), 2.0) is None
    assert collector.pause_wait_ms(before, Reading(7, 0.22, (2.0, 2.0)), 2.0) is None  # unstated
    assert collector.pause_wait_ms(after, before, 2.0) is None  # went back
    assert collector.pause_wait_ms(before, after, 0.0) is None
    assert collector.pause_wait_ms(None, after, 2.0) is None


def test_a_vus_bound_cycle_with_the_pauses_it_met() -> None:
    """FastAPI /gather?ms=100&n=10 at 100 VUs (2026-11-29): 754 rps, 0.79 of the model; its
    pauses made a random moment wait 5.864 ms, the server 77.7 % busy: a request waited that
    and the work queued behind it, 5.864 / (1 - 0.777) = 26.2 ms, and the model with it says
    751 rps. Not on a saturated worker, whose CPU queue already holds them."""
    from lab import model
    from lab.record import CellResult

    assert model.pause_hold_ms(5.864, 0.7765) == pytest.approx(26.24, abs=0.01)
    assert model.pause_hold_ms(5.864, 0.0) == pytest.approx(5.864)
    for wait, busy in ((None, 0.5), (5.0, None), (5.0, 0.9), (5.0, -0.1)):
        assert model.pause_hold_ms(wait, busy) is None
    demand = model.Demand(100.0, server_cpu_ms=0.78, overhead_ms=1.585)
    held = model.with_pauses(demand, 26.24)
    assert (held.overhead_ms, held.server_cpu_ms) == (pytest.approx(27.825), 0.78)
    info = {"language": "python", "worker_cpus": 1, "capacity": {}}
    before = model.predict("upstream", "gather", demand, 100, None, info, 1)
    after = model.predict("upstream", "gather", held, 100, None, info, 1)
    assert (before.bound, after.bound) == ("vus", "vus")
    assert after.rps == pytest.approx(100 * 1000 / (1000 * 100 / before.rps + 26.24), rel=0.01)
    row = CellResult(vus=100, rps=754.2, lat_avg_ms=133.6, predicted_latency_ms=104.6,
                     gc_pct=28.9, gc_calibration_pct=0.4, gc_wait_ms=5.864,
                     collector_rps=750.7)  # fmt: skip
    assert model.observed("vus", row) == (
        "a request took 134 ms (predicted 105 ms); the collector 29 % of the server's CPU "
        "(0 % in the calibration; its pauses 5.86 ms of wait at a random moment; at its share "
        "and pauses here the model says 751 rps: 1.00 of it)"
    )
    # a CPU-bound cell's reading names no pauses: its CPU's queue holds them
    row.server_cpu_pct, row.server_cpu_ms = 72.0, 0.78
    assert "pauses" not in model.observed("server-cpu", row)


def test_the_reading_beside_a_miss_names_the_collector() -> None:
    """Starlette /upstream?ms=100&n=10 at 100 VUs (run 20261128-193659): 0.82 of the model,
    bound by its CPU, the collector 33 % of it under the load and 10 % in the calibration."""
    from lab import model
    from lab.record import CellResult

    row = CellResult(server_cpu_ms=1.2, rps=669.1, server_cpu_pct=86.3, server_cpu_bound=True,
                     efficiency=0.82, gc_pct=32.9, gc_calibration_pct=9.5)  # fmt: skip
    assert model.limit_text("server-cpu", row) == (
        "server CPU 1.2 ms/request · under the load: 1.29 ms/request; the collector 33 % of "
        "the server's CPU (10 % in the calibration)"
    )
    row.collector_rps = 650.2  # the model at the load's share (the runner's, from Demand)
    assert model.observed("server-cpu", row) == (
        "1.29 ms/request; the collector 33 % of the server's CPU (10 % in the calibration; "
        "at its share here the model says 650 rps: 1.03 of it)"
    )
    row.collector_rps = None
    vus = CellResult(vus=100, rps=810.0, lat_avg_ms=123.4, predicted_latency_ms=106.2, gc_pct=4.0)
    assert model.observed("vus", vus) == (
        "a request took 123 ms (predicted 106 ms); the collector 4 % of the server's CPU"
    )
    row.gc_pct = row.gc_calibration_pct = None  # not timed (Go, the JVM): nothing said
    assert model.observed("server-cpu", row) == "1.29 ms/request"


def test_the_model_at_the_loads_collector_share() -> None:
    """The server's CPU per request (its own and its group's) without the calibration's
    collector and with the load's; nothing else moves (the upstream's is another process)."""
    from lab import model

    demand = model.Demand(100.0, server_cpu_ms=1.2, upstream_cpu_ms=0.5, lockstep_cpu_ms=0.8)
    at = model.at_collector_share(demand, 40.0, 10.0)
    assert at is not None
    assert at.server_cpu_ms == pytest.approx(1.2 * 0.9 / 0.6)
    assert at.lockstep_cpu_ms == pytest.approx(0.8 * 0.9 / 0.6)
    assert (at.upstream_cpu_ms, at.service_ms) == (0.5, 100.0)
    same = model.at_collector_share(demand, 10.0, 10.0)
    assert same is not None and same.server_cpu_ms == pytest.approx(1.2)
    for load, calibration in ((None, 10.0), (40.0, None), (100.0, 10.0), (40.0, 100.0)):
        assert model.at_collector_share(demand, load, calibration) is None
    assert model.at_collector_share(model.Demand(100.0), 40.0, 10.0) is None
    # a CPU-bound cell's rate follows: 1 / d on one CPU, so 0.6 / 0.9 of the prediction
    info = {"language": "python", "worker_cpus": 1, "capacity": {}}
    before = model.predict("cpu", "cpu", model.Demand(0.0, 1.0, 0.0), 50, None, info, 1)
    after = model.predict(
        "cpu",
        "cpu",
        model.at_collector_share(model.Demand(0.0, 1.0, 0.0), 40.0, 10.0),
        50,
        None,
        info,
        1,
    )
    assert after.rps / before.rps == pytest.approx(0.6 / 0.9, rel=0.02)
