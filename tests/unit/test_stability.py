"""The host's stability check (lab.stability, lab.proc.cpuspeed) and the tolerance it justifies."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import model, stability
from lab.proc import cpuspeed
from lab.record import CellResult
from lab.run import runner
from lab.rundir import RunDir
from lab.stability import Chunk

pytestmark = pytest.mark.unit


def chunks_at(speeds: list[float], cpu: int = 0, chunk_s: float = 0.01) -> list[Chunk]:
    """Chunks of chunk_s seconds on one CPU, the i-th at speeds[i] steps per second."""
    out, t = [], 0.0
    for speed in speeds:
        t += chunk_s
        out.append(Chunk(cpu, t, chunk_s, round(speed * chunk_s)))
    return out


def noisy_check(cv: float, seconds: float = 3.0, seed: int = 1) -> dict:
    """A check on two CPUs whose speed holds a level for 0.25 s, then takes another (CV cv):
    a host's noise lasts longer than a chunk."""
    rng = random.Random(seed)
    segments = round(seconds / 0.25)

    def speeds() -> list[float]:
        levels = [1e7 * max(0.1, rng.gauss(1, cv)) for _ in range(segments)]
        return [level for level in levels for _ in range(25)]

    chunks = [c for cpu in (0, 1) for c in chunks_at(speeds(), cpu)]
    return stability.check_record(chunks, "2030-01-01T00:00:00Z")


def test_window_rates_and_cv_of_a_known_pattern() -> None:
    # 0.5 s at 1e7 steps/s, 0.5 s at 2e7: over 0.5-s windows the speed alternates exactly
    speeds = ([1e7] * 50 + [2e7] * 50) * 2
    rates = stability.window_rates(chunks_at(speeds), 0.5)
    assert [round(r / 1e7, 3) for r in rates[0]] == [1.0, 2.0, 1.0, 2.0]
    cv, count = stability.pooled_cv(rates)
    assert count == 4 and cv == pytest.approx(0.5 / 1.5 * 2 / 3**0.5, rel=1e-3)
    # over 1-s windows both halves average out: no spread
    cv_1s, _ = stability.pooled_cv(stability.window_rates(chunks_at(speeds), 1.0))
    assert cv_1s == pytest.approx(0.0, abs=1e-9)


def test_cpus_are_scaled_by_their_own_speed() -> None:
    """A CPU steadily faster than the other is not noise."""
    chunks = chunks_at([1e7] * 300, cpu=0) + chunks_at([2e7] * 300, cpu=1)
    check = stability.check_record(chunks, "now")
    assert all(v == pytest.approx(0.0, abs=1e-9) for v in check["cv"].values())
    assert set(check["cv"]) == {"0.1", "0.3", "1"}


def test_a_speed_that_switches_levels_is_bimodal_and_gaussian_noise_is_not() -> None:
    rng = random.Random(3)
    two = [1e7 if (i // 20) % 2 else 1.4e7 for i in range(400)]
    one = [1e7 * rng.gauss(1, 0.05) for _ in range(400)]
    assert stability.check_record(chunks_at(two), "now")["bimodality"] > stability.BIMODAL_BC
    assert stability.check_record(chunks_at(one), "now")["bimodality"] < stability.BIMODAL_BC


def test_probes_beyond_the_checks_spread_are_drift() -> None:
    check = noisy_check(0.01)
    steady = [[t, cpu, 1.0 + 0.002 * ((t + cpu) % 3)] for t in range(10) for cpu in (0, 1)]
    drifting = [[t, cpu, 1.0 + 0.1 * (t % 2)] for t in range(10) for cpu in (0, 1)]
    assert stability.summarize(check, steady, [0, 1])["drift"] < 0.005
    run = stability.summarize(check, drifting, [0, 1])
    assert run["drift"] > 0.04
    assert run["cv_1s"] >= run["drift"] and not run["steady"] and run["warning"]
    assert run["probes"]["count"] == 10 and run["probes"]["range"] == [1.0, 1.1]


def test_tolerance_follows_an_injected_noisy_measurement_and_stays_within_bounds() -> None:
    """The issue's check: the same cell, the same share of CPU in its prediction, judged at
    5 % on a steady host, wider on a noisy one, never beyond 15 %; a wait stays at 5 %."""
    steady = stability.summarize(noisy_check(0.005), [], [0, 1])
    mild = stability.summarize(noisy_check(0.08), [], [0, 1])
    wild = stability.summarize(noisy_check(0.4), [], [0, 1])
    assert steady["steady"] and not mild["steady"] and not wild["steady"]
    tol_steady, why = stability.tolerance(steady, 1.0, 1.5, 2.0)
    assert tol_steady == model.TOLERANCE and "steady" in why
    tol_mild, why = stability.tolerance(mild, 1.0, 1.5, 2.0)
    assert model.TOLERANCE < tol_mild < model.TOLERANCE_MAX, why
    assert "CPU-bound" in why and "1.5 s calibration" in why
    tol_wild, why = stability.tolerance(wild, 1.0, 1.5, 2.0)
    assert tol_wild == model.TOLERANCE_MAX and "capped" in why
    assert stability.tolerance(wild, 0.0, 1.5, 2.0)[0] == model.TOLERANCE  # a wait
    # half the prediction on the CPUs: about half the width
    half, _ = stability.tolerance(mild, 0.5, 1.5, 2.0)
    assert half == pytest.approx(max(model.TOLERANCE, tol_mild / 2), rel=0.05)
    # the verdict of a cell 9 % above its prediction turns on the stability measured
    assert model.verdict("ok", 1.09, "", tol_steady) == "above model"
    assert model.verdict("ok", 1.09, "", tol_wild) == "as predicted"
    assert model.verdict("ok", 1.16, "", tol_wild) == "above model"
    assert stability.tolerance(None, 1.0, 1.5, 2.0)[0] == model.TOLERANCE
    # the why states the row's own figure, at every share (a fresh clone's CI caught a row
    # of 0.075 whose why said ±7 %, from the unrounded 0.07497)
    for share in [i / 4000 for i in range(200, 4001)]:
        tol, why = stability.tolerance(mild, share, 1.5, 2.0)
        assert why.startswith(f"±{tol:.0%}"), (share, tol, why)


def test_k6s_own_noise_widens_a_load_side_cell_even_on_a_steady_host() -> None:
    """k6's rate strays from its reference by more than the CPU-speed check sees (ten
    references at CV 8.7 % where the check read 1.2 %): a k6-bound cell is judged by the
    spread of k6's own readings where it is the larger, never beyond 15 %; a small spread
    leaves the host's figure."""
    steady = stability.summarize(noisy_check(0.005), [], [0, 1])
    mild = stability.summarize(noisy_check(0.08), [], [0, 1])
    assert stability.loadgen_sd(None, 3) == 0.0 and stability.loadgen_sd(0.087, 1) == 0.0
    k6_sd = stability.loadgen_sd(0.03, 3)
    assert k6_sd == pytest.approx(0.03 * math.sqrt(4 / 3))
    tol, why = stability.tolerance(steady, 1.0, 2.0, 7.0, k6_sd)
    assert tol == round(2 * k6_sd, 4) and "k6's own rate" in why, why
    assert why.startswith(f"±{tol:.0%}")
    capped, why = stability.tolerance(steady, 1.0, 2.0, 7.0, stability.loadgen_sd(0.087, 3))
    assert capped == model.TOLERANCE_MAX and "capped" in why
    # k6 steady: the steady host's 5 %; a noisier host than k6: the host's figure
    assert stability.tolerance(steady, 1.0, 2.0, 7.0, 0.01) == stability.tolerance(
        steady, 1.0, 2.0, 7.0
    )
    assert stability.tolerance(mild, 1.0, 2.0, 7.0, 0.001) == stability.tolerance(
        mild, 1.0, 2.0, 7.0
    )
    assert stability.tolerance(None, 1.0, 2.0, 7.0, k6_sd)[0] == tol  # not measured: k6's
    # and the verdict turns on it: a k6-bound cell at 0.94 of the model
    assert (
        model.verdict("ok", 0.94, "", stability.tolerance(steady, 1.0, 2.0, 7.0)[0])
        != "as predicted"
    )
    assert model.verdict("ok", 0.94, "", tol) == "as predicted"


def test_longer_windows_agree_better() -> None:
    noisy = stability.summarize(noisy_check(0.08), [], [0, 1])
    short, _ = stability.tolerance(noisy, 1.0, 0.5, 2.0)
    long, _ = stability.tolerance(noisy, 1.0, 1.5, 10.0)
    assert short > long


def test_speed_share_is_zero_for_a_wait_and_one_for_a_cpu() -> None:
    info = {"capacity": {"sync": 4, "cpu": 2}, "cpus": 2, "workers": 1}

    def share(kind: str, endpoint: str, demand: model.Demand, vus: int) -> float:
        return model.speed_share(
            demand, lambda d: model.predict(kind, endpoint, d, vus, None, info, 1).rps
        )

    wait = model.Demand(100.0, server_cpu_ms=0.1, overhead_ms=0.2, loadgen_us=60)
    assert share("sleep", "sync", wait, 50) < 0.01  # 4 slots of 100 ms: no CPU in sight
    cpu = model.Demand(0.0, server_cpu_ms=10.0, overhead_ms=0.2, loadgen_us=60)
    assert share("cpu", "cpu", cpu, 50) == pytest.approx(1.0, abs=0.02)


def test_describe_says_how_steady_and_warns() -> None:
    assert "not measured" in stability.describe(None)
    noisy = stability.summarize(noisy_check(0.08), [[1, 0, 0.9], [1, 1, 1.0]], [0, 1])
    line = stability.describe(noisy)
    assert "CV" in line and "warning" in line and "±15%" in line
    steady = stability.summarize(noisy_check(0.005), [], [0, 1])
    assert "steady" in stability.describe(steady) and "warning" not in stability.describe(steady)


def _busy_half_the_time(cpu: int, seconds: float) -> subprocess.Popen:
    """A competitor on `cpu`: busy 0.15 s, idle 0.15 s, for `seconds`."""
    code = (
        "import os, time\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        f"end = time.monotonic() + {seconds}\n"
        "while time.monotonic() < end:\n"
        "    t = time.monotonic() + 0.15\n"
        "    while time.monotonic() < t: pass\n"
        "    time.sleep(0.15)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def test_the_check_catches_a_host_whose_cpu_is_taken_half_the_time() -> None:
    """Real processes: the reference loop on one CPU, alone and then sharing it with a
    process busy half of every 0.3 s. The shared CPU runs at half speed half the time: its
    speed over 0.1-s windows varies by about a third (a quiet CPU: a few %)."""
    cpu = sorted(os.sched_getaffinity(0))[-1]

    def check_cv(competitor: bool) -> float:
        other = _busy_half_the_time(cpu, 3.0) if competitor else None
        try:
            time.sleep(0.05 if other else 0)
            chunks = cpuspeed.measure([cpu], 2.0)
        finally:
            if other:
                other.kill()
                other.wait()
        assert chunks and all(c.cpu == cpu and c.steps > 0 for c in chunks)
        assert max(c.end for c in chunks) == pytest.approx(2.0, abs=0.2)
        return stability.check_record(chunks, "now")["cv"]["0.1"]

    shared = check_cv(True)
    if shared < 0.15:  # a loaded host may blur the pattern once
        shared = check_cv(True)
    assert shared >= 0.15, shared


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("", stability.CHECK_S), ("0.5", 0.5), ("0.1", stability.CHECK_S), ("x", stability.CHECK_S)],
)
def test_the_checks_length_given_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float
) -> None:
    monkeypatch.setenv("LAB_HOST_CHECK_S", raw)
    assert stability.check_seconds() == seconds


def test_a_runs_rows_are_judged_at_the_end_with_its_whole_stability(tmp_path: Path) -> None:
    """A cell judged before its load at the check's ±5 % (the host looked steady, no probe
    yet), and the run's probes then found drift: at the run's end its row is judged at the
    tolerance the whole run's stability justifies, results.csv rewritten (the other rows and
    an earlier session's kept); a wait stays at ±5 %."""
    run = RunDir.create(tmp_path)
    lab_runner = runner.Runner(run, runner.Options(pin=False))
    steady = stability.summarize(noisy_check(0.005), [], [0, 1])
    earlier = CellResult(cell="old/x/hello@vus=50#1", status="ok", efficiency=0.9)
    cpu = CellResult(cell="t/p/cpu@vus=50#1", status="ok", efficiency=0.91)
    wait = CellResult(cell="t/p/sync?ms=100@vus=50#1", status="ok", efficiency=0.99)
    lab_runner.stability = steady
    for row, share in ((cpu, 1.0), (wait, 0.0)):
        lab_runner.tolerance_inputs[row.cell] = (share, 1.5, 2.0, 0.0)
        row.tolerance, row.tolerance_why = stability.tolerance(steady, share, 1.5, 2.0)
        row.verdict = model.verdict("ok", row.efficiency, "", row.tolerance)
    for row in (earlier, cpu, wait):
        run.append(row)
    assert cpu.verdict == "below model" and cpu.tolerance == model.TOLERANCE
    drifting = [[t, c, 1.0 + 0.1 * (t % 2)] for t in range(10) for c in (0, 1)]
    lab_runner.stability = stability.summarize(noisy_check(0.005), drifting, [0, 1])
    lab_runner._judge_at_the_end([cpu, wait])
    rows = {r.cell: r for r in run.rows()}
    assert list(rows) == [earlier.cell, cpu.cell, wait.cell]
    judged = rows[cpu.cell]
    assert model.TOLERANCE < judged.tolerance <= model.TOLERANCE_MAX, judged.tolerance_why
    assert judged.verdict == "as predicted" and "CPU-bound" in judged.tolerance_why
    assert (
        rows[wait.cell].tolerance == model.TOLERANCE and rows[wait.cell].verdict == "as predicted"
    )
    assert rows[earlier.cell].efficiency == 0.9 and rows[earlier.cell].tolerance is None
