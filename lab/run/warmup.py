"""Warm-up until steady. A runtime that compiles hot code while it runs (the JVM's HotSpot,
Node's V8) spends more CPU per request on its first thousands of requests than it will under
the load: its compilers run meanwhile and its code is not yet compiled. A calibration taken
then overstates the server's CPU per request (measured: CONTRACT.md, 'Warm-up'). A server
whose /info says `"jit": true` is therefore sent rounds of the cell's own calibration request
before it is calibrated, until its CPU per request stops falling and, where /info names its
compiler threads, they have stopped compiling (a runtime compiles in steps: its cost can be
flat for a while before the next compilation lowers it). The row records how long that took.
Other servers get the short warm-up of lab.run.runner.warm_up only."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from lab import model
from lab.matrix import Cell
from lab.proc import probe
from lab.run import calibrate

# As many requests as the server will take: a JIT compiles a method after thousands of calls
# (HotSpot: ~30,000 requests to steady for /hello), so the waits are of 1 ms (the same code
# path as the cell's: a sleep that parks, a call that waits) on up to CONNECTIONS connections.
WAIT_MS = 1
CPU_N = 1000
CONNECTIONS = 32
ROUND_CPU_S = 0.25  # a round ends once the server has used this much CPU...
ROUND_WALL_S = 1.0  # ...or after this long (waits of 1 ms use little CPU)
ROUND_MIN = 20  # requests at least
# A round that costs at least (1 - FALL) of the cheapest round before it has not fallen; so
# many such rounds in a row are the steady state. 5 %: the model's own tolerance.
FALL = 0.05
STEADY_ROUNDS = 2
# A round in which the compiler threads used more than this share of the server's CPU is
# still compiling, whatever its cost per request (a load too: lab.model.still_compiling).
COMPILING = model.COMPILING
# A steady JIT's CPU per request, as a share of a cold one's (HotSpot /hello: 0.036 ms
# steady, 0.32 cold; jdkhttp /sync's first calibration 1.5 ms, steady 0.1). A cell whose
# prediction moves by less than COLD_SENSITIVITY_MAX were its CPU that much lower needs no
# warm-up: a wait bound by its VUs or its slots (Node's /sync spent 6 s warming a blocked
# loop for nothing). 2 %, two-fifths of the tolerance: the JVM's wait-bound quick cells with
# a warm-up cut short at 6 s, not steady, measured 0.98-1.01 (run 20261125-023414).
STEADY_SHARE = 0.1
COLD_SENSITIVITY_MAX = 0.02
# A server still falling then is calibrated anyway, and the row says so (a matrix may set
# less: its warm_up_max).
MAX_S = 30.0


@dataclass(frozen=True)
class WarmUp:
    seconds: float  # wall time of the rounds
    requests: int
    steady: bool  # CPU per request stopped falling (and compiling stopped) within MAX_S
    cpu_ms: tuple[float, ...]  # each round's server CPU per request: the curve
    compiling: tuple[float, ...] = ()  # each round's share of that CPU in compiler threads


def compiles_while_running(info: dict[str, Any]) -> bool:
    """/info's `jit`: the runtime compiles hot code while it serves (contract, Info)."""
    return info.get("jit") is True


def compiler_threads(info: dict[str, Any]) -> tuple[str, ...]:
    """/info's `compiler_threads`: the names of the runtime's compiler threads, as /proc
    shows them (their first 15 characters)."""
    names = info.get("compiler_threads") or ()
    return tuple(n[:15] for n in names if isinstance(n, str) and n)


def until_steady(
    base: str,
    endpoint: Any,
    cell: Cell,
    server_pid: int,
    compilers: tuple[str, ...] = (),
    max_s: float = MAX_S,
) -> WarmUp:
    """Rounds of the cell's cheapest request (warm_query) on min(VUs, CONNECTIONS) kept-alive
    connections, each round ended by ROUND_CPU_S of server CPU or ROUND_WALL_S, until
    steady(); then rounds of the calibration's own request until steady again (a longer wait
    or more work takes other branches, which compile in turn: Spring MVC's /sync read 0.29
    ms a request right after the cheap phase, 0.14 in the next calibration). max_s in all.
    compilers: the names of the server's compiler threads, whose share of each round's CPU
    is read."""
    paths = list(dict.fromkeys([warm_query(endpoint, cell), calibrate.cpu_query(endpoint, cell)]))
    k = max(1, min(cell.vus, CONNECTIONS))
    conns = [probe.Connection(base, timeout=60) for _ in range(k)]
    curve: list[float] = []
    compiling: list[float] = []
    requests = 0
    started = time.monotonic()
    done = False
    try:
        for path in paths:
            first = len(curve)  # each phase is judged on its own rounds
            done = False
            while not done and time.monotonic() - started < max_s:
                before = cpu_reading(server_pid, compilers)
                count = calibrate.send_until(
                    conns, path, server_pid, before[0], ROUND_CPU_S, ROUND_WALL_S, ROUND_MIN
                )
                after = cpu_reading(server_pid, compilers)
                used = calibrate.used_s(before[0], after[0])
                curve.append(used / count * 1000)
                compiling.append(compiling_share(before, after))
                requests += count
                done = steady(curve[first:], compiling[first:])
    finally:
        for c in conns:
            c.__exit__()
    return WarmUp(time.monotonic() - started, requests, done, tuple(curve), tuple(compiling))


def warm_query(endpoint: Any, cell: Cell) -> str:
    """The cell's request made cheap on the same code path: waits of at most WAIT_MS, and CPU
    work of at most CPU_N steps (its loop compiles within one request; the rest of the path,
    called once per request, compiles after thousands of calls, so the cheaper the sooner)."""
    if endpoint.kind == "cpu" and cell.param("n") is not None:
        return endpoint.path + cell.query(n=min(cell.param("n") or 0, CPU_N))
    return calibrate.calibration_query(endpoint, cell, WAIT_MS)


def steady(curve: list[float], compiling: list[float] | None = None) -> bool:
    """Whether the last STEADY_ROUNDS rounds each cost at least (1 - FALL) of the cheapest
    round before it (the CPU per request has stopped falling) and, where the compiler
    threads' shares are known, none of them spent more than COMPILING compiling."""
    if len(curve) <= STEADY_ROUNDS:
        return False
    last = range(len(curve) - STEADY_ROUNDS, len(curve))
    if compiling and any(compiling[i] > COMPILING for i in last):
        return False
    return all(curve[i] >= (1 - FALL) * min(curve[:i]) for i in last)


CpuReading = tuple[tuple[float, float], float]  # the tree's CPU so far, its compilers'


def cpu_reading(pid: int, compilers: tuple[str, ...]) -> CpuReading:
    """The server tree's CPU so far (calibrate.tree_cpu_s) and its compiler threads'."""
    return calibrate.tree_cpu_s(pid), calibrate.named_threads_cpu_s(pid, compilers)


def compiling_share(before: CpuReading, after: CpuReading) -> float:
    """The compiler threads' share of the server's CPU between two readings (a warm-up round,
    a load), 0-1."""
    return calibrate.share_of(after[1] - before[1], calibrate.used_s(before[0], after[0]))
