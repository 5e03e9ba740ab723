"""The model's measured inputs, taken before the load: what one request costs the idle server
(its process tree's CPU, the round trip beyond it, the upstream service's and the database's
CPU, and /db-rows's time in the database) for every endpoint, and what one request costs k6
(once per run). lab/model.py explains their use."""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from lab import model
from lab.contract import Endpoint
from lab.matrix import Cell
from lab.proc import probe, server
from lab.proc.sampler import Sampler, cpu_seconds, kernel_seconds
from lab.run import loadgen

# Stop when the server has used this much CPU, or after this long, whichever comes first
# (at least MIN_REQUESTS). CPU time is read in nanoseconds (schedstat); what limits the
# precision is what a short window catches, not the clock: a longer window varies less
# (measured: CONTRACT.md, 'The capacity model', d).
CPU_S = 1.0
WALL_S = 1.5
# A first, shorter window: enough where the prediction barely depends on the CPU it reads
# (a 100 ms wait dwarfs a millisecond of CPU); the runner measures the whole window again
# when it does not (lab.model.cpu_sensitive).
SHORT_WALL_S = 0.5
MIN_REQUESTS = 5
WAIT_MS = 10  # waits of this length (or the cell's, if shorter) show a sleep's overshoot
WAIT_REQUESTS = 9  # the median of 9: a loaded machine stalls single requests by ms
# A lone VU's /hello is its round trip and little else, timed as k6 sends it: one request
# after another for seconds, the median of them all (a cell's over its calibration's window,
# gin's in k6's reference for this long). This host's round trips move between
# modes for seconds at a time (FastAPI's /hello: 0.28 or 0.34-0.39 ms, a median of 51 reading
# either), which a short burst, or one after an idle moment, reads as the whole.
LONE_S = 0.5
# /db-rows's time per query is timed over at least this many queries (two lone requests, of
# this many and of one): one query adds about 0.1-0.3 ms, so 19 of them stand well above the
# medians' noise of some 0.05 ms.
QUERIES = 20
# Without a measurement (no Go toolchain for the reference server): a cost measured once,
# recorded as assumed in run.json (where: CONTRACT.md, 'The capacity model', k6 per request).
ASSUMED_K6_US = 57.0
LOADGEN_DURATION = "2s"
LOADGEN_WAIT_S = 15.0  # k6's start, the 2 s and its graceful stop; a hung k6 is given up on
# k6's top rate is read this many times, one run after another: its median is the cost, its
# spread k6's own noise, which the host's CPU-speed check does not see (ten 2-s runs minutes
# apart: CV 8.7 % on a host whose check read 1.2 %; CONTRACT.md, 'k6's cost per request').
LOADGEN_READINGS = 3
# k6 paced by its answers (not the bottleneck): each VU's request waits this long on gin's
# /sync, so k6 runs at VUs x 10 requests a second, as a cell bound elsewhere runs it; for
# longer, sampled in longer intervals: a 0.1 s interval holds 1-2 of the kernel's 10 ms ticks
# of a k6 busy 10-20 %, and their median read 195-400 µs a request for one k6
PACED_MS = 100
PACED_DURATION = "3s"
PACED_INTERVAL_S = 0.5
# k6 at this share of its CPUs is the bottleneck of the reference cell: k6's Go runtime never
# reaches 100 % (measured: CONTRACT.md, 'The capacity model', k6 per request).
K6_BOUND_PCT = 75.0
# k6's flag for a new connection per request, and the suffix of that reference's files
NO_REUSE = "--no-connection-reuse"
RECONNECT_SUFFIX = "-reconnect"


class CalibrationError(RuntimeError):
    pass


def tree_tasks(pid: int) -> list[Path]:
    """The /proc task folders of every live thread of pid's process tree."""
    try:
        top = psutil.Process(pid)
        procs = [top, *top.children(recursive=True)]
    except psutil.Error:
        return []
    tasks: list[Path] = []
    for p in procs:
        with contextlib.suppress(OSError):
            tasks.extend(Path(f"/proc/{p.pid}/task").iterdir())
    return tasks


def tree_cpu_s(pid: int) -> tuple[float, float]:
    """CPU time of a process tree so far: (nanosecond-precise over the live threads, tick-
    precise over every thread that ever ran). Threads that ended since the first reading
    show only in the second."""
    total = 0
    for task in tree_tasks(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9, cpu_seconds(pid)


def named_threads_cpu_s(pid: int, names: tuple[str, ...]) -> float:
    """CPU seconds so far of the live threads of pid's process tree whose name starts with
    one of names (0 without names): a JIT's compiler threads (lab.run.warmup.compiler_threads)."""
    if not names:
        return 0.0
    total = 0
    for task in tree_tasks(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if (task / "comm").read_text().strip().startswith(names):
                total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def share_of(part_s: float, used: float) -> float:
    """A part of the server's CPU seconds (its compiler threads') as a share of all it used
    meanwhile, 0-1 (0 where it used none)."""
    return min(1.0, max(0.0, part_s) / used) if used > 0 else 0.0


def used_s(before: tuple[float, float], after: tuple[float, float]) -> float:
    """CPU seconds between two tree_cpu_s readings."""
    precise, ticks = after[0] - before[0], after[1] - before[1]
    # More than two 10 ms ticks apart: threads came and went (a thread per request), so
    # only the coarse count has all of it.
    return ticks if ticks - precise > 0.02 else precise


@dataclass(frozen=True)
class ServerCost:
    cpu_ms: float | None  # server tree CPU per request
    overhead_ms: float  # median round trip minus the server's CPU (and no wait)
    upstream_cpu_ms: float | None  # upstream service CPU per request
    requests: int
    overshoot_ms: float = 0.0  # how much later than asked the waits of one request end
    db_cpu_ms: float | None = None  # the database's process-tree CPU per request
    # The waiting time S of an endpoint whose contract says "calibrated" (/db-rows): its
    # queries' round trips beyond both sides' CPU (None: the contract states S).
    wait_ms: float | None = None
    # How far the k connections' requests moved in lockstep (lab.model.lockstep_share), from
    # their mean time per request and this client's own CPU per request
    lockstep: float | None = None
    # The kernel's interrupt work on the load side's CPUs per request beside the upstream's or
    # the database's (their packets' softirq: no process's CPU time holds it; None: not read)
    load_kernel_ms: float | None = None
    # The server closed its connections after each reply (gunicorn's sync worker does): k6
    # then opens a new one for every request, which costs it 2-3 times a kept-alive one's
    closes: bool = False
    # The share of the server's CPU over the window in its JIT's compiler threads (0-1; None:
    # none named): cpu_ms leaves it out, a compilation being no request's cost
    compiling: float | None = None


def calibration_query(endpoint: Endpoint, cell: Cell, wait_ms: int = 0) -> str:
    """The cell's own request with the wait set to wait_ms (at most the cell's): the same code
    path (thread hand-off, the n calls, the HTTP client), without the long sleep that would
    make a calibration long."""
    ms = cell.param("ms")
    return endpoint.path + (cell.query() if ms is None else cell.query(ms=min(ms, wait_ms)))


def cpu_query(endpoint: Endpoint, cell: Cell) -> str:
    """The request whose CPU is measured: the cell's with waits of min(ms, WAIT_MS), not 0.
    A wait that ends later is a wake-up of its own (a timer, the poller, a goroutine or a
    coroutine resumed, the upstream's reply read alone), which a wait of 0 never pays, so
    ms=0 reads less CPU than the load uses (measured: CONTRACT.md, 'The capacity model')."""
    return calibration_query(endpoint, cell, WAIT_MS)


def send_until(
    conns: list[probe.Client],
    path: str,
    server_pid: int | None,
    before: tuple[float, float],
    cpu_s: float,
    wall_s: float,
    min_requests: int,
    client_cpu: list[float] | None = None,
    round_trips: list[float] | None = None,
) -> int:
    """Each connection sends path one request after another until the server (its tree_cpu_s
    `before` the requests) has used cpu_s of CPU or wall_s have passed, min_requests at least
    (ten times wall_s at most: requests of seconds each); returns how many were answered.
    A request that is not answered 200 is a CalibrationError. client_cpu: each connection's
    thread adds the CPU time it used (this client's own, not the watching of the server's);
    round_trips: every answered request's round trip, in seconds."""
    counts = [0] * len(conns)
    failed: list[str] = []
    stop = threading.Event()

    def send(i: int) -> None:
        started = time.thread_time()
        try:
            while not stop.is_set():
                reply = conns[i].get(path)
                if reply.status != 200:
                    failed.append(f"calibration request {path} answered {reply.status}")
                    return
                counts[i] += 1
                if round_trips is not None:
                    round_trips.append(reply.seconds)
        except OSError as exc:
            failed.append(f"calibration request {path} failed: {exc}")
        finally:
            if client_cpu is not None:
                client_cpu.append(time.thread_time() - started)

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(len(conns))]
    started = time.monotonic()
    for t in threads:
        t.start()
    try:
        while not failed:
            time.sleep(0.02)
            used = used_s(before, tree_cpu_s(server_pid)) if server_pid else 0.0
            elapsed = time.monotonic() - started
            if sum(counts) >= min_requests and (used >= cpu_s or elapsed >= wall_s):
                break
            if elapsed >= wall_s * 10:
                break  # requests of seconds each: whatever has completed
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    if failed:
        raise CalibrationError(failed[0])
    return max(1, sum(counts))


def server_cost(
    base: str,
    endpoint: Endpoint,
    cell: Cell,
    server_pid: int | None,
    upstream_pid: int | None = None,
    *,
    db_pid: int | None = None,
    wall_s: float = WALL_S,
    load_cpus: list[int] | None = None,
    connections: int | None = None,
    compilers: tuple[str, ...] = (),
) -> ServerCost:
    """The server's CPU per request: min(VUs, connections) kept-alive connections (as k6 keeps
    them; by default model.calibration_connections: more for an endpoint without a wait),
    each sending its requests one after another, until the server has used CPU_S of CPU or
    WALL_S have passed. Several connections because a server idle between requests pays a
    wake-up per request that a loaded one shares out (measured: CONTRACT.md, 'The capacity
    model', d); wall_s: a shorter window (SHORT_WALL_S). The requests wait as the cell's do,
    only shorter (cpu_query). Then the round trip, on one connection (a lone VU's /hello's:
    the window's own requests, as k6 sends them, LONE_S). The upstream's and the
    database's CPU (db_pid: the top of its process tree, PostgreSQL's backends being children
    of the postmaster) are read over the same requests, and with them (load_cpus: the load
    side's, where both run beside this client) the kernel's interrupt work on those CPUs.
    connections: more for a second lockstep share (wide_lockstep). compilers: the names of the
    server's JIT compiler threads, whose CPU over the window is not the requests' (a JVM
    compiling a calibration's new path spent 57-79 % of its CPU there while its other threads'
    CPU per request held steady: CONTRACT.md, 'Warm-up')."""
    path = cpu_query(endpoint, cell)
    k = max(1, min(cell.vus, connections or model.calibration_connections(endpoint.kind)))
    # Without a wait, the server's CPU is the rate: a client that keeps a fast server busy, as
    # k6 does (probe.LeanConnection; http.client's threads left aiohttp's /hello 86 % busy and
    # its d 25-45 % above the load's CPU per request). A lone VU's round trip stays
    # http.client's: k6's lone cycle is measured against it (loadgen_lone_us).
    lean = endpoint.kind in model.CPU_KINDS and k > 1
    client = probe.LeanConnection if lean else probe.Connection
    conns: list[probe.Client] = [client(base, timeout=60) for _ in range(k)]
    try:
        closes = False
        for c in conns:  # a connection's first request pays for lazy set-up
            first = c.get(path)
            if first.status != 200:
                raise CalibrationError(f"calibration request {path} failed")
            closes = closes or first.closed
        srv0 = tree_cpu_s(server_pid) if server_pid else (0.0, 0.0)
        jit0 = named_threads_cpu_s(server_pid, compilers) if server_pid else 0.0
        up0 = tree_cpu_s(upstream_pid) if upstream_pid else (0.0, 0.0)
        db0 = tree_cpu_s(db_pid) if db_pid else (0.0, 0.0)
        beside = bool(load_cpus and (upstream_pid or db_pid))
        kernel0 = kernel_seconds(load_cpus or []) if beside else 0.0
        started, client = time.perf_counter(), list[float]()
        # a lone VU's /hello: its round trip timed over the window, as k6 sends it (LONE_S)
        lone = [] if k == 1 and endpoint.kind == "none" else None
        count = send_until(conns, path, server_pid, srv0, CPU_S, wall_s, MIN_REQUESTS, client, lone)
        cycle_ms = k * (time.perf_counter() - started) / count * 1000
        client_ms = sum(client) / count * 1000
        srv1 = tree_cpu_s(server_pid) if server_pid else (0.0, 0.0)
        jit_s = named_threads_cpu_s(server_pid, compilers) - jit0 if server_pid else 0.0
        up1 = tree_cpu_s(upstream_pid) if upstream_pid else (0.0, 0.0)
        db1 = tree_cpu_s(db_pid) if db_pid else (0.0, 0.0)
        kernel_ms = (kernel_seconds(load_cpus or []) - kernel0) / count * 1000 if beside else None
        used = used_s(srv0, srv1) if server_pid else 0.0
        compiling = share_of(jit_s, used) if compilers else None
        cpu_ms = used * (1 - (compiling or 0.0)) / count * 1000 if server_pid else None
        up_ms = used_s(up0, up1) / count * 1000 if upstream_pid else None
        db_ms = used_s(db0, db1) / count * 1000 if db_pid else None
        # Both CPUs queue at their own stations in the model: neither is part of Z (the
        # database's, when it is known, is in a lone request's time).
        cpus = (cpu_ms or 0.0) + (db_ms or 0.0)
        wait = None
        if measures_wait(endpoint):
            overhead, wait = _queries(conns[0], endpoint, cell, cpus)
            overshoot = 0.0
        elif lone:
            overhead, overshoot = max(0.0, statistics.median(lone) * 1000 - cpus), 0.0
        else:
            overhead, overshoot = _round_trip(conns[0], endpoint, cell, cpus)
    finally:
        for c in conns:
            c.__exit__()
    values = dict(cell.params)  # the waits the k connections' requests made (cpu_query's)
    if "ms" in values:
        values["ms"] = min(values["ms"], WAIT_MS)
    waits = endpoint.service_ms(values)
    lockstep = None
    if waits is not None and endpoint.kind not in model.CPU_KINDS:  # Z holds the overshoot
        lockstep = model.lockstep_share(k, waits + overhead, cpu_ms, client_ms, cycle_ms)
    return ServerCost(
        cpu_ms,
        overhead,
        up_ms,
        count,
        overshoot,
        db_ms,
        wait,
        lockstep,
        kernel_ms,
        closes,
        compiling,
    )


def measures_wait(endpoint: Endpoint) -> bool:
    """Whether the calibration measures the endpoint's waiting time S: the contract's service
    is "calibrated" (no expression) for database work counted in queries (/db-rows)."""
    return endpoint.kind == "db" and endpoint.service_ms() is None and bool(endpoint.param("n"))


def queries_path(endpoint: Endpoint, cell: Cell, n: int) -> str:
    """The cell's request (its own parameters, the contract's defaults for the rest) with n
    queries."""
    values = {**endpoint.defaults(), **dict(cell.params), "n": n}
    return endpoint.path + "?" + "&".join(f"{k}={v}" for k, v in values.items())


def _queries(
    conn: probe.Client, endpoint: Endpoint, cell: Cell, cpu_ms: float
) -> tuple[float, float]:
    """(Z, S) of /db-rows, from lone requests: the time one query adds (driver, loopback,
    database: the pooled connection is held for all of it) is the difference of a request of
    max(n, QUERIES) queries and one of 1, over the queries between them; S is the request's n
    of them less both sides' CPU (cpu_ms: they queue at their CPUs), so that the connection
    is held for S + CPU = n round trips; Z is the rest of the lone request's time."""
    n = {**endpoint.defaults(), **dict(cell.params)}["n"]
    many = max(n, QUERIES)
    walls = {k: _median_ms(conn, queries_path(endpoint, cell, k)) for k in sorted({1, n, many})}
    per_query = max(0.0, walls[many] - walls[1]) / (many - 1)
    wait = max(0.0, n * per_query - cpu_ms)
    return max(0.0, walls[n] - cpu_ms - wait), wait


def _median_ms(conn: probe.Client, path: str) -> float:
    walls = []
    for _ in range(WAIT_REQUESTS):
        reply = conn.get(path)
        if reply.status != 200:
            raise CalibrationError(f"calibration request {path} answered {reply.status}")
        walls.append(reply.seconds * 1000)
    return statistics.median(walls)


def _round_trip(
    conn: probe.Client, endpoint: Endpoint, cell: Cell, cpu_ms: float
) -> tuple[float, float]:
    """The round trip beyond the wait and the CPU (Z), one request at a time, with real
    (short) waits; and the waits' overshoot alone: a sleep ends late by the timer's slack and
    the wake-up, once per sleep (measured: CONTRACT.md, 'The capacity model', o). The
    overshoot holds the server's slot; the rest of the round trip (the client, loopback) does
    not."""
    values = dict(cell.params)
    if "ms" not in values:
        return max(0.0, _median_ms(conn, calibration_query(endpoint, cell)) - cpu_ms), 0.0
    values["ms"] = min(values["ms"], WAIT_MS)
    wait = endpoint.service_ms(values) or 0.0
    waited = _median_ms(conn, endpoint.path + cell.query(ms=values["ms"]))
    bare = _median_ms(conn, calibration_query(endpoint, cell))
    return max(0.0, waited - wait - cpu_ms), max(0.0, waited - wait - bare)


@dataclass(frozen=True)
class LoadgenCost:
    """What one request costs k6 at a number of VUs. `us_per_request` is what the model uses:
    k6's CPUs over the rate it reached against the cheapest server when k6 was the bottleneck
    (its cost where it binds, the time its Go runtime cannot use included), else its CPU time
    per request."""

    us_per_request: float
    rps: float | None  # what k6 reached meanwhile
    cpus: int
    source: str  # "measured: ...", "given: ..." or "assumed: ..."
    vus: int | None = None
    cpu_us: float | None = None  # k6's CPU time per request
    # k6's CPU time per request where its requests wait (gin's /sync?ms=PACED_MS) and the
    # rate it ran at: what k6 costs where it is not the bottleneck (lab.model.k6_busy)
    paced_us: float | None = None
    paced_rps: float | None = None
    # measured with a new connection per request (k6's --no-connection-reuse): the cost of a
    # cell whose server closes its connections (ServerCost.closes), where k6 reconnects each time
    reconnects: bool = False
    # us_per_request's coefficient of variation over its `readings` (LOADGEN_READINGS runs):
    # k6's own noise, for the tolerance of a cell bound on the load side (lab.stability)
    spread: float | None = None
    readings: int = 1
    # At 1 VU: how much longer k6's cycle on gin's /hello is than the round trip this client
    # times for the same request (as server_cost times a 1-VU cell's: the cell's d + Z plus
    # this is k6's cycle there; below 0 where this client is the slower). A lone VU never overlaps
    # its requests, and much of k6's CPU per request (its metrics, its runtime) runs while the
    # request is away: its cycle is not d + Z + cpu_us (measured: CONTRACT.md, 'The capacity
    # model', k6 per request). None: more VUs.
    lone_us: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def wide_lockstep(
    base: str,
    endpoint: Endpoint,
    cell: Cell,
    server_pid: int | None,
    compilers: tuple[str, ...] = (),
) -> float | None:
    """The lockstep share at min(VUs, model.WIDE_CONNECTIONS) connections (model.group_share:
    whether a group grows with them), over the whole window: a group forms over its first
    rounds (model.cpu_sensitivity). compilers: as server_cost's."""
    wide = server_cost(
        base, endpoint, cell, server_pid, connections=model.WIDE_CONNECTIONS, compilers=compilers
    )
    return wide.lockstep


def k6_cost_us(busy_pct: float, rps: float, cpus: int) -> tuple[float, str]:
    """k6's cost per request from its reference cell (busy_pct: % of one CPU): where k6 was the
    bottleneck, its CPUs over the rate it reached, so that its ceiling is that rate; else its
    CPU time per request. And how it was obtained."""
    if busy_pct >= K6_BOUND_PCT * cpus:
        return cpus / rps * 1e6, "its CPUs over its top rate"
    return busy_pct / 100.0 / rps * 1e6, "its CPU time per request"


def loadgen_cost(
    k6_cpus: list[int] | None,
    server_cpus: list[int] | None,
    folder: Path,
    vus: int,
    instances: list[loadgen.Instance] | None = None,
    host: str = server.HOST,
    reconnect: bool = False,
) -> LoadgenCost:
    """k6's cost per request on its own CPUs at `vus` VUs (it grows with the VUs, measured:
    CONTRACT.md, 'The capacity model'): lab.js on the Go target's /hello (the cheapest server
    there is, bound to `host`, pinned to the server's CPUs) for a couple of seconds, k6
    sampled, LOADGEN_READINGS times (the median reading's cost, and their spread); then
    paced, on its /sync?ms=PACED_MS (k6 waits for its answers). instances: k6 run as the
    cell's will be (the runner's: each instance's CPUs, execution segment, per-request output
    and load host's namespace, all of which cost k6 CPU: two instances on one CPU 27-43 %
    more a request than one, the links of two load hosts' namespaces about 20 % more again);
    None: one k6 on k6_cpus. reconnect: every request on a new connection, as k6 sends them
    to a server that closes each one (measured: CONTRACT.md, 'The capacity model', k6 per
    request). Falls back to ASSUMED_K6_US, saying so."""
    cpus = len(k6_cpus) if k6_cpus else (os.cpu_count() or 1)
    given = os.environ.get("LAB_K6_US", "")
    with contextlib.suppress(ValueError):
        if float(given) > 0:  # a value measured before, to save the 6 s (recorded as given)
            return LoadgenCost(
                float(given), None, cpus, "given: LAB_K6_US", vus, reconnects=reconnect
            )
    try:
        from lab.targets import find

        gin = find("gin")
    except Exception as exc:  # no Go target in this checkout: the recorded constant
        return LoadgenCost(ASSUMED_K6_US, None, cpus, f"assumed: no gin target ({exc})", vus)
    folder.mkdir(parents=True, exist_ok=True)
    if instances is None:
        name = folder / f"loadgen-{vus}-k6"
        instances = [loadgen.Instance(name.with_suffix(".json"), name.with_suffix(".log"), k6_cpus)]
    several = f", {len(instances)} instances" if len(instances) > 1 else ""
    written = ", every request written" if any(i.run_args for i in instances) else ""
    inside = ", from load hosts' namespaces" if any(i.prefix for i in instances) else ""
    anew = ", a new connection each" if reconnect else ""
    if reconnect:
        instances = [_renamed(i, RECONNECT_SUFFIX, (*i.run_args, NO_REUSE)) for i in instances]
    proc: server.ServerProcess | None = None
    try:
        proc = server.target_server(
            gin,
            gin.default_profile,
            host=host,
            cpus=server_cpus,
            log=folder / f"loadgen-{vus}{RECONNECT_SUFFIX if reconnect else ''}-server.log",
        )
        proc.start(30)
        cell = Cell("gin", gin.default_profile, "hello", (), vus, None, LOADGEN_DURATION, 1)
        readings, trips = [], []
        for n in range(LOADGEN_READINGS):
            named = [_renamed(i, f"-{n}") if n else i for i in instances]
            readings.append(_k6_reading(cell, proc.url, named, 0.1))
            if vus == 1:  # this client's round trip beside each: the host's phases move both
                trips.append(lone_round_trip_ms(proc.url, reconnect))
        costs = [k6_cost_us(pct, rps, cpus)[0] for rps, pct in readings]
        rps, pct = readings[costs.index(statistics.median_low(costs))]
        us, how = k6_cost_us(pct, rps, cpus)
        spread = statistics.stdev(costs) / statistics.fmean(costs) if len(costs) > 1 else None
        paced = replace(cell, endpoint="sync", params=(("ms", PACED_MS),), duration=PACED_DURATION)
        paced_us: float | None = None
        paced_rps: float | None = None
        try:  # without it, k6 costs its top rate's at every rate (the model says so)
            paced_rps, pct_paced = _k6_reading(
                paced, proc.url, [_renamed(i, "-paced") for i in instances], PACED_INTERVAL_S
            )
            paced_us = pct_paced / 100.0 / paced_rps * 1e6
        except CalibrationError:
            paced_rps = None
        lone = k6_lone_us(rps, statistics.median(trips)) if trips else None
        return LoadgenCost(
            us,
            rps,
            cpus,
            f"measured: lab.js, {vus} VUs on gin /hello{several}{written}{inside}{anew} ({how}, "
            f"the median of {len(costs)})",
            vus,
            pct / 100.0 / rps * 1e6,
            paced_us,
            paced_rps,
            reconnect,
            None if spread is None else round(spread, 4),
            len(costs),
            lone,
        )
    except (OSError, server.ServerError, CalibrationError, loadgen.K6Missing) as exc:
        failed = f"assumed: measurement failed ({exc})"
        return LoadgenCost(ASSUMED_K6_US, None, cpus, failed, vus, reconnects=reconnect)
    finally:
        if proc:
            proc.stop()


def lone_round_trip_ms(url: str, reconnect: bool) -> float:
    """The median round trip of /hello at `url` as this client times a lone VU's (Z + d):
    requests one after another for LONE_S, on a kept-alive connection, or with reconnect on a
    new one each, its connect included (against a server that closes, this client reconnects
    inside its timed request)."""
    walls: list[float] = []
    with probe.Connection(url) as conn:
        conn.get("/hello")  # the connection's lazy set-up
        ended = time.monotonic() + LONE_S
        while time.monotonic() < ended:
            started = time.perf_counter()
            reply = probe.get(url, "/hello") if reconnect else conn.get("/hello")
            if reply.status != 200:
                raise CalibrationError(f"calibration request /hello answered {reply.status}")
            walls.append((time.perf_counter() - started) * 1000)
    return statistics.median(walls)


def k6_lone_us(rps: float, round_trip_ms: float) -> float:
    """How much longer one VU's k6 cycle (1 / rps) is than this client's round trip of the
    same request: below 0 where this client's own parsing takes longer than k6's."""
    return 1e6 / rps - round_trip_ms * 1000.0


def _k6_reading(
    cell: Cell, url: str, instances: list[loadgen.Instance], interval_s: float
) -> tuple[float, float]:
    """(rps, % of one CPU busy: the median interval's) of k6 running the cell's load on its
    instances, sampled every interval_s."""
    group = loadgen.start_group(cell, url, instances, canary_rate=0)
    try:
        sampler = Sampler({f"k6.{i}": p for i, p in enumerate(group.pids)}, interval_s).start()
        code, _ = group.wait(timeout=LOADGEN_WAIT_S)
        busy = [u.busy_pct for u in sampler.stop().values()]
    finally:
        group.kill()
    summaries = [loadgen.read_summary(inst.summary) for inst in instances]
    rate = loadgen.rps([d for d in summaries if d]) if all(summaries) else None
    if code != 0 or None in busy or not rate:
        raise CalibrationError(f"k6 measured nothing on /{cell.endpoint}")
    return float(rate), float(sum(busy))  # type: ignore[arg-type]


def _renamed(
    inst: loadgen.Instance, suffix: str, run_args: tuple[str, ...] | None = None
) -> loadgen.Instance:
    """The instance writing its summary and log beside the reference cell's, not over them
    (and with other flags of `k6 run`, when given)."""
    return replace(
        inst,
        summary=inst.summary.with_name(f"{inst.summary.stem}{suffix}.json"),
        log=inst.log.with_name(f"{inst.log.stem}{suffix}.log"),
        run_args=inst.run_args if run_args is None else run_args,
    )


def with_duration(cell: Cell, seconds: float) -> Cell:
    """The cell with the k6 duration the runner really uses (its id stays the same)."""
    if seconds == cell.duration_s:
        return cell
    return replace(cell, duration=f"{seconds:g}s")
