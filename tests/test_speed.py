"""lab/speed.py: the probe reads how fast a CPU runs, not how busy it is; its share is small."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from lab import speed

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

CPU = min(os.sched_getaffinity(0))
LONG = 200_000


def probe(seconds: float, work_n: int = speed.REFERENCE_N) -> speed.Speed:
    p = speed.Probe([CPU], work_n).start()
    time.sleep(seconds)
    return p.stop()


def test_probe_measures_its_cpu_at_a_small_share() -> None:
    s = probe(0.5)
    assert s.ms is not None and 0.01 < s.ms < 50
    assert 5 <= s.samples <= 0.5 / speed.PERIOD_S + 1
    assert 0 < s.share <= speed.SHARE_MAX


def test_a_busy_cpu_is_not_a_slow_one() -> None:
    """Beside a process that keeps the probe's CPU busy, each loop waits for the CPU but runs
    as fast: thread CPU time stays (the host's own speed varies: ±35 % over 1 s windows),
    while wall time per loop doubles. Loops of ~20 ms here, longer than the kernel's time
    slice, so that the busy process takes turns inside them (the probe's own 0.4 ms loops
    finish before a woken probe is preempted, whatever the clock)."""

    def ratio() -> float:
        quiet = probe(1.0, LONG)
        hog = subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            preexec_fn=lambda: os.sched_setaffinity(0, {CPU}),
        )
        try:
            time.sleep(0.2)
            busy = probe(1.0, LONG)
        finally:
            hog.kill()
            hog.wait(5)
        return speed.ratio(busy, quiet) or 0.0

    r = ratio()
    if not 0.65 < r < 1.35:
        r = ratio()  # a shared host: once more
    assert 0.65 < r < 1.35


def test_ratio() -> None:
    assert speed.ratio(speed.Speed(1.1, 10, 0.01), speed.Speed(1.0, 10, 0.01)) == 1.1
    assert speed.ratio(speed.Speed(None, 0, 0.0), speed.Speed(1.0, 10, 0.01)) is None
    assert speed.ratio(speed.Speed(1.0, 3, 0.0), None) is None


def test_unpinned_probe_measures_nothing() -> None:
    assert speed.Probe(None).start().stop() == speed.Speed(None, 0, 0.0)
