"""How fast the machine's CPUs run, measured beside the work: a fixed reference loop timed in
thread CPU time on each CPU of a set, a few hundred µs every PERIOD_S.

Why: this machine's CPUs do not run at a constant speed. The same fnv1a(100,000) loop, alone
on one CPU, takes 8-19 ms (CV 20 % per run, 13 % over 0.3 s, 10 % over 1 s, 5 % over 3 s; the
two CPUs only weakly correlated, r = 0.23): a host's other guests share its cores. CPU time per
request measured on the idle server a second before the load is then off by that much, and a
CPU-bound cell misses a ±5 % model for reasons that are the host's, not the server's. So the
model's CPU demands are measured in reference units: the probe runs while the server is
calibrated and again while the cell runs, and a demand measured at one speed is rescaled to
the other (lab/model.py, `Demand.server_speed`). The probe measures the machine, never the
server: a wrong capacity, a missing resource or a server slower than it should be still
misses by as much as before (tests/test_speed.py).

Thread CPU time excludes the time a probe thread waits for a CPU (or for the GIL), so the
probe reads the speed of the CPU while it runs, not how busy the CPU is. It takes SHARE of each
CPU it runs on; lab/model.py counts that share as used."""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import dataclass

PERIOD_S = 0.025
REFERENCE_N = 4_000  # loop iterations per sample: ~0.4 ms here
SHARE_MAX = 0.03  # the probe's CPU share is about 0.4 / 25 = 1.6 %; recorded, never above this


def reference_work(n: int = REFERENCE_N) -> int:
    """The same integer work as the contract's /cpu (32-bit FNV-1a), so the probe slows down
    with what slows the servers' work down."""
    x = 2166136261
    for i in range(n):
        x = ((x ^ (i & 0xFF)) * 16777619) & 0xFFFFFFFF
    return x


@dataclass(frozen=True)
class Speed:
    """Mean thread CPU time of one reference loop (ms; larger = slower) and the share of the
    CPUs the probe itself used."""

    ms: float | None
    samples: int
    share: float


class Probe:
    """Call start() before the work and stop() after it: one pinned thread per CPU."""

    def __init__(self, cpus: list[int] | None, work_n: int = REFERENCE_N) -> None:
        self.cpus = list(cpus or [])
        self.work_n = work_n
        self._stop = threading.Event()
        self._times: list[float] = []
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._loop, args=(cpu,), daemon=True) for cpu in self.cpus
        ]
        self._started = 0.0
        self._wall = 0.0

    def start(self) -> Probe:
        self._started = time.monotonic()
        for t in self._threads:
            t.start()
        return self

    def _loop(self, cpu: int) -> None:
        try:
            os.sched_setaffinity(threading.get_native_id(), {cpu})
        except OSError:
            return  # not on this CPU: measure nothing rather than the wrong CPU
        reference_work(200)  # warm
        while not self._stop.wait(PERIOD_S):
            t0 = time.thread_time()
            reference_work(self.work_n)
            spent = time.thread_time() - t0
            with self._lock:
                self._times.append(spent)

    def stop(self) -> Speed:
        if not self._stop.is_set():
            self._stop.set()
            for t in self._threads:
                t.join(timeout=2.0)
            self._wall = time.monotonic() - self._started
        with self._lock:
            times = list(self._times)
        if not times or not self._wall:
            return Speed(None, 0, 0.0)
        share = min(SHARE_MAX, sum(times) / (self._wall * max(1, len(self.cpus))))
        return Speed(statistics.fmean(times) * 1000.0, len(times), share)


def ratio(during: Speed | None, before: Speed | None) -> float | None:
    """How much longer the same CPU work takes during the load than it took during the
    calibration (1.1: 10 % slower). None when either was not measured."""
    if not during or not before or not during.ms or not before.ms:
        return None
    return during.ms / before.ms
