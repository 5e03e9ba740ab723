"""The model end to end: one short real cell per limiting resource (`python -m lab bench` with
real servers and k6), each predicted before its load, named by the bound the cell is built
for and measured within a band that a wrong model misses (a capacity off by a factor, a
missing CPU). Timing on a shared 2-CPU machine: a miss is retried once."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from harness.claims import TIMED_COLLECTORS
from harness.labrun import ENV, K6_US  # ENV: the tests' runs' (a short host check, k6's cost)

from lab import ROOT
from lab.record import CellResult
from lab.run import calibrate, collector
from lab.rundir import RunDir
from lab.targets import find

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

# Wide enough for a loaded 2-CPU machine, narrow enough to catch a capacity off by 2x or a
# CPU resource left out (the old model predicted Go /hello 'no model' and FastAPI /cpu at
# 1 CPU per request of 2 x the real rate).
BAND = (0.75, 1.25)


def bench(
    tmp_path: Path, *args: str, measure_k6: bool = False, env: dict[str, str] | None = None
) -> CellResult:
    out = tmp_path / "out"
    env = {**ENV, **(env or {})}
    if measure_k6:  # the runner measures k6 itself
        del env["LAB_K6_US"]
    done = subprocess.run(
        [sys.executable, "-m", "lab", "bench", *args, "--duration", "2s", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = RunDir(out / "latest").rows()
    assert row.status == "ok", row.error
    return row


def cost_under_load_ms(row: CellResult) -> tuple[float, float, float] | None:
    """For a CPU-bound cell: (CPU per request during the load, as calibrated before it, the
    share of its CPUs the resource got), from the sampler's observations."""
    if not row.rps:
        return None
    if row.bound == "loadgen" and row.k6_cpu_pct and row.loadgen_us:
        return row.k6_cpu_pct / 100 / row.rps * 1000, row.loadgen_us / 1000, row.k6_cpu_pct
    if row.bound == "server-cpu" and row.server_cpu_pct and row.server_cpu_ms:
        return row.server_cpu_pct / 100 / row.rps * 1000, row.server_cpu_ms, row.server_cpu_pct
    return None


def check(row: CellResult, bound: str) -> str | None:
    """Why the row does not show the bound as predicted (None when it does)."""
    if row.bound != bound:
        return f"bound {row.bound!r}, expected {bound!r}: {row}"
    if row.efficiency is not None and BAND[0] <= row.efficiency <= BAND[1]:
        return None
    cost = cost_under_load_ms(row)
    if cost and row.efficiency and row.efficiency < BAND[0]:
        # Slower than the CPU ceiling: on a machine others share, the resource may not get its
        # CPU. The model still holds if each request cost what the calibration measured and
        # the resource was short of CPU (not saturated) - never if it was saturated.
        during, before, share = cost
        if 0.7 <= during / before <= 1.3 and share < 80:
            return None
        return f"{bound}: {during:.3f} ms/request under load vs {before:.3f} before: {row}"
    return f"efficiency {row.efficiency} outside {BAND}: {row}"


CASES = {
    # flask's one sync worker: 1 slot of 20 ms (+ its CPU and round trip): ~48 rps
    "slots": ("flask", "sync", "--ms", "20", "--vus", "4"),
    # go /async is unbounded: 5 VUs each waiting 50 ms: ~98 rps
    "vus": ("go", "async", "--ms", "50", "--vus", "5"),
    # an open rate below every ceiling is served as is
    "open-rate": ("go", "async", "--ms", "50", "--vus", "5", "--rate", "30"),
    # FastAPI's inline /cpu holds the one event loop: its measured CPU per request decides
    "server-cpu": ("fastapi", "cpu", "--n", "100000", "--vus", "4"),
}


def fresh_cpu_ms(row: CellResult, folder: Path) -> float | None:
    """The cell's CPU per request read again right after its run, the runner's way
    (calibrate.server_cost on a fresh server of the same target, pinned to the CPU the run
    gave it): what the host's CPUs do now."""
    from lab.contract import load
    from lab.matrix import Cell
    from lab.proc import server

    params = tuple((k, v) for k, v in (("ms", row.ms), ("n", row.n)) if v is not None)
    cell = Cell(row.target, row.profile, row.endpoint, params, row.vus, None, "2s", 1)
    cpus = [int(c) for c in row.server_cpus.split()] or None
    folder.mkdir(parents=True, exist_ok=True)
    proc = server.target_server(
        find(row.target), row.profile, cpus=cpus, env={"WORKERS": "1"}, log=folder / "fresh.log"
    )
    proc.start(30)
    try:
        return calibrate.server_cost(proc.url, load()[row.endpoint], cell, proc.pid).cpu_ms
    finally:
        proc.stop()


def fresh_k6_ms(row: CellResult, folder: Path) -> float | None:
    """k6's cost per request measured again right after the cell, the runner's way
    (calibrate.loadgen_cost on the CPUs the run gave k6 and the server): what the host's
    CPUs do now."""

    def cpus(text: str) -> list[int] | None:
        return [int(c) for c in text.split()] or None

    folder.mkdir(parents=True, exist_ok=True)
    cost = calibrate.loadgen_cost(cpus(row.k6_cpus), cpus(row.server_cpus), folder, row.vus)
    return cost.us_per_request / 1000 if cost.source.startswith("measured") else None


def host_speed_changed(row: CellResult, after_ms: float | None) -> str | None:
    """A CPU-bound cell (the server's or k6's) below the band whose CPU per request under the
    load was not what its calibration read: the model still holds if the host itself got
    slower (its CPU speed varies on its own, a CV of 10-33 % here: a CI run once read 11.9 ms
    of server CPU under the load against 8.0 calibrated, twice; k6 once 0.159 ms against
    0.126, twice). A calibration taken right after the load (a fresh server's, or k6's
    reference run) must read what the load did (within 30 %), and the prediction from it
    must be within the band. A model that miscounts the CPUs misses by a factor with either
    calibration; a calibration that misses part of the CPU reads as little afterwards as
    before."""
    cost = cost_under_load_ms(row)
    cpu_bound = row.bound in ("server-cpu", "loadgen")
    if not cpu_bound or not cost or not row.efficiency or not after_ms:
        return "no CPU-bound cell to judge again"
    during, before, _ = cost
    if not 0.7 <= during / after_ms <= 1.3:
        return f"a fresh calibration read {after_ms:.3f} ms, the load {during:.3f}: {row}"
    efficiency = row.efficiency * after_ms / before  # the prediction made from after_ms
    if not BAND[0] <= efficiency <= BAND[1]:
        return f"efficiency {efficiency:.2f} from a fresh calibration ({after_ms:.3f} ms): {row}"
    return None


def judged(tmp_path: Path, bound: str) -> tuple[CellResult, str | None]:
    row = bench(tmp_path, *CASES[bound])
    problem = check(row, bound)
    if problem and bound == "server-cpu" and row.bound == bound:
        slowed = host_speed_changed(row, fresh_cpu_ms(row, tmp_path / "fresh"))
        problem = None if slowed is None else f"{problem}; {slowed}"
    return row, problem


def test_a_fresh_calibration_excuses_only_the_host() -> None:
    """The CI miss (8.0 ms calibrated, 11.9 under the load, FastAPI's one loop saturated) is
    the host's when a calibration right after reads what the load did; not when it reads what
    the first did (the calibration misses CPU), nor when the model counted two CPUs."""
    row = CellResult(
        status="ok", bound="server-cpu", rps=84.0, predicted_rps=125.0, efficiency=0.672,
        server_cpu_ms=8.0, server_cpu_pct=100.0,
    )  # fmt: skip
    assert host_speed_changed(row, 11.5) is None
    assert "fresh calibration read 8.100" in (host_speed_changed(row, 8.1) or "")
    two_cpus = replace(row, predicted_rps=250.0, efficiency=0.336)
    assert "efficiency 0.48" in (host_speed_changed(two_cpus, 11.5) or "")
    # k6's cost: the local miss (0.126 ms calibrated, 0.159 under the load, k6 saturated)
    k6 = CellResult(
        status="ok", bound="loadgen", rps=5703.74, predicted_rps=7825.91, efficiency=0.729,
        k6_cpu_pct=90.9, loadgen_us=126.5,
    )  # fmt: skip
    assert host_speed_changed(k6, 0.150) is None
    assert "efficiency 0.73 from a fresh calibration" in (host_speed_changed(k6, 0.127) or "")
    assert "fresh calibration read 0.100" in (host_speed_changed(k6, 0.100) or "")
    assert "no CPU-bound cell" in (host_speed_changed(replace(k6, bound="vus"), 0.150) or "")


@pytest.mark.parametrize("bound", list(CASES))
def test_bound_end_to_end(tmp_path: Path, bound: str) -> None:
    row, problem = judged(tmp_path, bound)
    if problem:  # a shared machine: once more before calling it a failure
        row, problem = judged(tmp_path / "again", bound)
    assert problem is None, problem
    # predicted before the load from measured inputs, and recorded
    assert row.server_cpu_ms and row.server_cpu_ms > 0
    assert row.overhead_ms is not None and row.loadgen_us == float(K6_US)
    assert row.measured_s and row.measured_s >= 2.0
    assert row.verdict in ("as predicted", "below model", "above model")
    # gunicorn's sync worker closes every connection: k6's cost is the reconnecting one
    assert row.loadgen_reconnects is (row.target == "flask"), row
    # a Python or Node server times its collector (/info's collector): its share of the
    # server's CPU around the calibration, and around the load where it can be what limited
    timed = find(row.target).language in TIMED_COLLECTORS
    assert (row.gc_calibration_pct is not None) is timed, row
    assert (row.gc_pct is not None) is (timed and row.bound in collector.LOAD_BOUNDS), row
    for share in (row.gc_pct, row.gc_calibration_pct):
        assert share is None or 0 <= share <= 100, row
    # and the wait its pauses made at a random moment of the load (lab.run.collector)
    assert (row.gc_wait_ms is not None) is (row.gc_pct is not None), row
    assert row.gc_wait_ms is None or row.gc_wait_ms >= 0, row
    # beside them, the model at the load's share (model.at_collector_share)
    both = None not in (row.gc_pct, row.gc_calibration_pct) and row.gc_pct < 100
    both = both and not row.burst_period_s  # whole bursts: another count
    assert (row.collector_rps is not None) is both, row
    assert row.collector_rps is None or row.collector_rps > 0, row


def test_loadgen_bound_hello_and_k6_measured(tmp_path: Path) -> None:
    """Go's /hello costs the server less CPU than it costs k6: k6's ceiling is the
    prediction. Here k6's cost is measured for real, once for the run."""

    def one(path: Path) -> tuple[CellResult, str | None]:
        row = bench(path, "go", "hello", "--vus", "20", measure_k6=True)
        problem = check(row, "loadgen")
        if problem and row.bound == "loadgen":
            slowed = host_speed_changed(row, fresh_k6_ms(row, path / "fresh"))
            problem = None if slowed is None else f"{problem}; {slowed}"
        return row, problem

    row, problem = one(tmp_path)
    if problem:
        row, problem = one(tmp_path / "again")
    assert problem is None, problem
    assert row.loadgen_us and 20 < row.loadgen_us < 500  # µs of k6 CPU per request
    assert row.loadgen_rps_max == pytest.approx(1e6 / row.loadgen_us, rel=0.01)
    # and paced: 20 VUs on gin's /sync?ms=100, each about 10 requests a second
    assert row.loadgen_paced_us and row.loadgen_paced_rps
    assert 150 < row.loadgen_paced_rps <= 200
    meta = RunDir(next(p for p in (tmp_path / "out").iterdir() if p.name != "latest")).meta()
    assert meta.loadgen and meta.loadgen[0]["source"].startswith("measured")
    # read LOADGEN_READINGS times: their spread judges the cells k6 binds (lab.stability)
    assert meta.loadgen[0]["readings"] == calibrate.LOADGEN_READINGS
    assert 0 <= meta.loadgen[0]["spread"] < 1


def test_censored_cell_is_lengthened(tmp_path: Path) -> None:
    """flask's one worker on /sequential?ms=40&n=2, 2 x 40 ms: about 12 rps predicted, so
    a 2 s cell would complete 24 requests: the runner plans 80 (7 s) and says so."""
    row = bench(tmp_path, "flask", "sequential", "--ms", "40", "--n", "2", "--vus", "3")
    assert row.bound == "slots"
    assert row.duration_s == 2.0
    assert row.measured_s is not None and row.measured_s >= 5.0
    assert row.requests is not None and row.requests >= 36
    assert not row.censored and row.verdict != "censored"


def test_fastapi_answers_a_flood_in_one_burst() -> None:
    """The flood anomaly, measured: 3 x 40 requests of 500 ms released at once. Both serve
    40 at a time (the model's C / S), but FastAPI validates a `def` endpoint's return value
    in the same anyio pool (fastapi.routing.serialize_response -> run_in_threadpool), so
    every finished sleep queues for a second token behind all the waiting requests: nothing
    is answered until every sleep is done. Starlette answers 40 per round, in order."""
    from lab.proc import probe, server

    firsts = {}
    for name in ("fastapi", "starlette"):
        proc = server.target_server(find(name), env={"THREADS": "40", "WORKERS": "1"})
        proc.start(30)
        try:
            _, replies = probe.batch(proc.url, "/sync?ms=500", 120, timeout=60)
        finally:
            proc.stop()
        ends = sorted(r.end for r in replies)
        assert all(r.status == 200 for r in replies)
        assert 1.4 < ends[-1] < 2.5, (name, ends[-1])  # three rounds of 500 ms either way
        firsts[name] = ends[0]
    assert firsts["starlette"] < 0.9  # the first round is answered after one service time
    assert firsts["fastapi"] > 1.4  # nothing before the third round has slept


# Each database cell through the runner (`lab bench`): a real PostgreSQL on k6's CPU, gin with
# DB_POOL on the server's, the calibration from k6's CPU (the runner's own), the database
# sampled during the load. Where the database's CPU is the bound, k6's cost is measured (it
# shares that CPU with the database); the pool's ~79 rps are far below k6's ceiling whatever
# k6 costs, so that cell is spared k6's reference run (8 s).
DB_CASES = {
    # 20 VUs on gin's 4 pooled connections, each held 50 ms: ~79 rps
    "db-pool": (4, False, ("go", "db", "--ms", "50", "--vus", "20")),
    # 20 queries per request with a pool that never runs out: the database's CPU on k6's CPU
    "db-cpu": (50, True, ("go", "db-rows", "--n", "20", "--vus", "50")),
}


@pytest.mark.parametrize("bound", list(DB_CASES))
def test_db_bound_end_to_end(db_out: Path, bound: str) -> None:
    pool, measure_k6, args = DB_CASES[bound]

    def one(path: Path) -> tuple[CellResult, str | None]:
        row = bench(path, *args, measure_k6=measure_k6, env={"DB_POOL": str(pool)})
        ok = row.bound == bound and row.efficiency and BAND[0] <= row.efficiency <= BAND[1]
        return row, None if ok else f"{bound}: {row}"

    row, problem = one(db_out / "first")
    if problem:  # a shared machine: once more before calling it a failure
        row, problem = one(db_out / "again")
    assert problem is None, problem
    # the database's CPU was read from its process tree (the backends are the postmaster's
    # children), before the load and during it. During a db-pool load the database mostly
    # sleeps (0.4 % of a CPU on gin's /db: about one 10 ms tick in 3 s, read as 0.0 in a CI
    # run), so only the db-cpu load must show it busy.
    assert row.db_cpu_ms and row.db_cpu_ms > 0
    assert row.db_cpu_pct is not None
    if bound == "db-cpu":
        assert row.db_cpu_pct > 10  # 20 queries a request: the database works (~40-65 %)
        # and the kernel for its packets, on the same CPU (0.13-0.19 ms a request here)
        assert row.load_kernel_ms and row.load_kernel_ms > 0.01
    if bound == "db-pool":
        assert (row.db_pool, row.capacity) == (4, 4)
