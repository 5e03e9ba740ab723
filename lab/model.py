"""The capacity model: a cell's throughput and latency predicted from every resource a request
uses, each measured on the idle server before the load or stated by the server in /info.
Nothing measured during a cell's own load enters its prediction (else efficiency would be a
tautology). CONTRACT.md ("The capacity model") has the same rules as a table.

A closed k6 cell (N VUs, each sending its next request when the last one answered) is a
closed queueing network. One request visits:

  slots       the C waiting slots the server claims in /info (workers, threads, an event
              loop, anyio tokens; C = inf when only connections bound it), each held for
              the contract's waiting time S plus the request's server CPU d and the
              waits' overshoot o (a sleep ends late by the timer's slack and the wake-up);
  server-cpu  the server's CPUs: d = CPU time of the server's whole process tree per request
              (HTTP parsing, the framework, an HTTP client's fan-out, the CPU work itself),
              measured on the idle server over up to 8 kept-alive connections; m = the CPUs it
              may use, and at most /info's worker_cpus per worker process (Node: one event
              loop; Python: one GIL each);
  db-pool     the slots of a database endpoint when its capacity is the connection pool's
              (/info: capacity = workers x database.pool, the handler's own slots being
              more): a request holds its pooled connection for S + d + o + its database CPU
              (the CPU of the database's process tree per request, measured like d);
  loadgen     the load side's CPUs: k6's cost per request (measured once per VU count:
              lab.js on the Go target's /hello, k6's CPUs over its top rate; and paced, on
              its /sync, where k6 waits for its answers and costs more: k6_busy) plus, for
              /upstream, the upstream service's CPU per request and, for the database
              endpoints, the database's CPU per request (both share k6's CPUs); with several
              k6 instances (--loadgens), the distinct CPUs they run on (load_side_cpus);
  overhead    Z: the rest of one round trip on the idle server (loopback, kernel, the
              hand-off to a thread pool, a sleep's overshoot), a pure delay; with the load
              in network namespaces (--netns), plus their links' measured round trip.

Method. The slots hold a request for a fixed time (a sleep): with fixed service times a
multi-server station has no queueing below its capacity and is saturated above it, so its
asymptotic bound min(N / (S + d + Z), C / (S + d + o)) is exact on either side of the knee,
where exact MVA (which assumes exponential service) would under-predict by 2-5 %. The CPUs are
shared by many short, variable bursts (processor sharing by the kernel, the GIL), where
queueing near saturation is real: for them we run exact mean-value analysis of the closed
network (delay S + Z; the server and load-side CPUs as queueing stations, a multi-CPU station
by Seidmann's approximation: demand d/m queueing plus d(m-1)/m delay, exact at both ends).
The prediction is the smaller of the two. `bound` names the tightest asymptotic bound:
slots or db-pool (C / (S + d + o + database CPU)), server-cpu (m / d), loadgen, upstream-cpu or
db-cpu (CPUs / load-side CPU per request, named by its largest part), or vus (N / (S + d + Z +
load-side CPU): every VU is waiting for its own answer). Latency follows from Little's law:
N / X.

Lockstep. MVA's queue lets a request wait for the others' CPU only when they happen to be
there. An event loop serves every request that is ready before it reads the next ones, so
requests that end their waits together are answered together and start their next waits
together: the group persists, and each request's cycle waits for the whole group's CPU
(S + Z + N d / m, the pessimistic bound of operational analysis). Django's ASGI hops to the
request's thread hold it there (CONTRACT.md). The calibration's min(N, 8) connections measure
how far the server goes that way (lockstep_share, g: 0 MVA's queue, 1 the group); for an
unbounded endpoint that waits, the cycle is MVA's plus g of the way to the group's. A group
need not grow with N: hypercorn's are the requests that reach its loop together, about as
many at 32 connections as at 8. For more than 8 VUs a second share at min(N, 32) tells the
two apart (group_share): a group that grows keeps the first share, one that does not keeps
its size, a smaller share of more VUs. A request of n waits keeps the group a single wait's
requests form, measured on /async (group_endpoint): Django's forms at a request's ends.

The database endpoints (kind db). /db and /db-blocking wait `ms` inside the database
(pg_sleep): S = ms, like a sleep. /db-rows ("calibrated" in the contract) runs n queries one
after another on one pooled connection; its S is measured on the idle server
(lab/run/calibrate.py): the lone request's n round trips (n x the time one query adds, from
two lone requests of n' and 1 queries) less both sides' CPU, which queue at their CPUs; so
the pooled connection is held for S + d + database CPU = the n round trips, and the rest of
the lone request is Z. /db-blocking on an event loop holds the loop (C = workers, bound
slots), as /blocking does. The query's loopback round trip beyond both CPUs (about 0.1 ms)
is part of Z for /db, not of the hold: 0.1 % of a 100 ms wait.

A burst (k VUs sending one request each, all at once: a post's `iterations = 1`) has no
steady state: C slots answer it in ceil(k / C) rounds of one hold each, so its mean answer
time is the staircase's mean and its last answer comes after ceil(k / C) holds
(predict_burst); N / X, a closed loop's mean, would be the last answer's time instead.

An open cell (k6 starts R requests per second with at most N VUs) serves R while R is below
every ceiling (bound open-rate; latency S + Z plus each CPU's M/M/1 residence d / (1 - U));
above one it is overloaded and serves that ceiling.

Tolerance. Repeated cells agree within 0.03-1.5 % (coefficient of variation of rps over
repeats, issue 8), and a cell that completes at least MIN_REQUESTS requests counts its rate to
within 1 / MIN_REQUESTS = 2.5 %; ±5 % holds both with room, while a wrong capacity or a
missing resource misses by far more (a whole factor for a capacity, 10-25 % for an HTTP
client's CPU at the knee).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lab.contract import load

TOLERANCE = 0.05
# A CPU-bound cell's tolerance widens with the host's measured speed spread, up to this: a
# wrong capacity misses by a whole factor, a missing resource by 10-25 %.
TOLERANCE_MAX = 0.15
# A cell must complete this many requests to measure its rate: the count is exact to ±1
# request (the first answers arrive one service time after the start), so 40 bound the error
# by 2.5 %, half the tolerance.
MIN_REQUESTS = 40
# A cell the model says would complete fewer is lengthened, up to this many seconds; beyond it
# the cell is marked censored instead of reporting a number that is not a throughput.
MAX_CELL_S = 60.0
PLAN_MARGIN = 2.0  # a lengthened cell is planned for this many times MIN_REQUESTS
# A JIT whose compiler threads used more than this share of the server's CPU was compiling:
# in a warm-up round, not yet steady; during a load, the server changed under it.
COMPILING = 0.05
# A closed cell with this many VUs per slot is a flood: the rate is still C / S, but each
# request waits N / X on average, and the order of answers is the server's (see CONTRACT.md).
FLOOD = 10
# A burst-aligned window (burst_aligned_s) ends this share of its bursts' time after the last
# one is due: a burst this late (3 ms more a hold) still counts, and a server that leaves a
# request in flight past its burst (hypercorn answers one early; its VU's next request waits
# for the next group) is counted over this much more than its bursts' time.
BURST_LANDING = 0.03
# Observations during the load (never part of a prediction): shown beside the verdict.
LOADGEN_BOUND_PCT = 80.0  # k6 (plus the upstream and the database) at this share of its CPUs
SERVER_BOUND_PCT = 85.0  # the server's CPUs at this share, median of 0.25 s samples

BOUNDS = (
    "slots",
    "db-pool",
    "server-cpu",
    "loadgen",
    "upstream-cpu",
    "db-cpu",
    "vus",
    "open-rate",
)
LOAD_SIDE = ("loadgen", "upstream-cpu", "db-cpu")  # the bounds on k6's CPUs
# A calibration's short window (lab/run/calibrate.py, SHORT_WALL_S) reads a CPU per request
# that may be off by this much (CONTRACT.md, 'The capacity model', d: a CV of 13.7 % over
# 0.3 s, and 18 % high right after a warm-up); its reading is kept only when an error that
# large moves the prediction by less than CPU_SENSITIVITY_MAX, a fifth of the tolerance.
SHORT_CPU_ERROR = 0.25
CPU_SENSITIVITY_MAX = 0.01
# (lockstep_cpu_ms: /async's d, the group's CPU where a cell's shares are /async's)
MEASURED_CPUS = (
    "server_cpu_ms",
    "upstream_cpu_ms",
    "db_cpu_ms",
    "load_kernel_ms",
    "lockstep_cpu_ms",
)
# The server's own CPUs per request among them: what its collector's share is part of
# (at_collector_share)
SERVER_CPUS = ("server_cpu_ms", "lockstep_cpu_ms")
# The calibration's connections (lab.run.calibrate: min(VUs, CONNECTIONS)), and those of the
# second lockstep share a cell of more VUs gets (min(VUs, WIDE_CONNECTIONS)). With four times
# the connections, a group at least GROUP_GROWS times the first one's grows with them (Django's
# thread hops: 6-7 requests of 8, 21-24 of 32); one that does not has its size (hypercorn:
# 6-8 of 8, 5-6 of 32), measured: CONTRACT.md, 'The capacity model', lockstep.
CONNECTIONS = 8
WIDE_CONNECTIONS = 32
GROUP_GROWS = 2.0
# The endpoint whose shares predict one whose n waits come one after another or at once
# (group_endpoint): a single wait's.
GROUP_ENDPOINT = "async"
# Kinds without a wait: their rate is their CPU per request, and they have no lockstep (their
# group is their queue). They are calibrated on min(VUs, CPU_CONNECTIONS) connections, as many
# as the cell's k6 keeps busy: eight of this client's could not keep a fast server busy (FastAPI
# /hello 93 % busy), whose idle moments cost wake-ups the load shares out, so d read 10-14 %
# above the load's CPU per request (CONTRACT.md, 'The capacity model', d).
CPU_KINDS = ("cpu", "none")
CPU_CONNECTIONS = 50


def calibration_connections(kind: str) -> int:
    """The most connections the calibration of an endpoint of this kind sends on."""
    return CPU_CONNECTIONS if kind in CPU_KINDS else CONNECTIONS


@dataclass(frozen=True)
class Demand:
    """What one request needs, measured before the load (None: not measured)."""

    service_ms: float  # waiting time S in a slot (contract); 0 for CPU endpoints
    server_cpu_ms: float | None = None  # d
    overhead_ms: float | None = None  # Z
    upstream_cpu_ms: float | None = None
    loadgen_us: float | None = None  # k6's CPU per request at its top rate, in µs
    overshoot_ms: float | None = None  # how late the waits end (holds the slot)
    db_cpu_ms: float | None = None  # the database's CPU per request (on k6's CPUs)
    # How far the calibration's requests moved in lockstep (lockstep_share): 0, each queued
    # for the server's CPU as MVA expects; 1, each waited for all of its group's CPU
    lockstep: float | None = None
    # the same share at min(VUs, WIDE_CONNECTIONS) connections, for a cell of more VUs than
    # CONNECTIONS whose first share is above 0 (None: not measured)
    lockstep_wide: float | None = None
    # whether that second share was read (lockstep_wide None then: not told from the
    # calibration client's own convoy, lockstep_share)
    lockstep_wide_read: bool = False
    # the CPU per request of the requests the group waits for, where the shares are another
    # endpoint's (group_endpoint: a single wait's d; None: this endpoint's d)
    lockstep_cpu_ms: float | None = None
    # the share of the server's CPU its JIT's compiler threads took during the calibration, in
    # %, left out of d (lab.run.calibrate.server_cost; None: no compiler threads named)
    jit_calibration_pct: float | None = None
    # k6's CPU per request where it is not the bottleneck (its requests wait) and the rate it
    # was measured at: a k6 that waits for its answers pays a wake-up per request that a
    # saturated one shares out (None: k6 costs loadgen_us at every rate)
    loadgen_paced_us: float | None = None
    loadgen_paced_rps: float | None = None
    # the kernel's interrupt work on k6's CPUs per request beside the upstream or the database
    # (their packets' softirq, which no process's CPU time holds)
    load_kernel_ms: float | None = None
    # k6's costs above were measured with a new connection per request: the server closes
    # its connections, and k6 reconnects for every request
    loadgen_reconnects: bool = False
    # At 1 VU, how much longer k6's cycle is than the calibration client's round trip (Z + d)
    # of the same request, in µs, on gin's /hello (None: k6's cost per request, as for more VUs)
    loadgen_lone_us: float | None = None

    def load_side_ms(self, cpus: float = 1.0) -> float:
        """The load side's CPU per request at the rate that saturates its `cpus`."""
        return sum(self.load_side(cpus).values())

    def load_side(self, cpus: float = 1.0) -> dict[str, float]:
        """What one request costs k6's CPUs, per bound, at the rate that saturates them: k6
        itself (k6_busy) and what shares its CPUs."""
        ceiling = self.load_side_ceiling(cpus)
        kernel = self.load_kernel_ms or 0.0  # the packets of the upstream's or the database's
        db = self.db_cpu_ms or 0.0
        return {
            "loadgen": k6_busy(self, ceiling, cpus) / ceiling * 1000.0 if ceiling else 0.0,
            "upstream-cpu": (self.upstream_cpu_ms or 0.0) + (0.0 if db else kernel),
            "db-cpu": db + kernel if db else 0.0,
        }

    def load_side_ceiling(self, cpus: float) -> float:
        """The rate at which k6 and what shares its CPUs (the upstream's, the database's CPU
        per request, the kernel's work for their packets) use all `cpus` of them:
        k6_busy(x) + x * rest = cpus (0: no load side)."""
        top = (self.loadgen_us or 0.0) / 1e6
        rest = sum(v or 0.0 for v in (self.upstream_cpu_ms, self.db_cpu_ms, self.load_kernel_ms))
        rest /= 1000.0
        paced = _paced_point(self, cpus)
        if paced is None:
            return cpus / (top + rest) if top + rest > 0 else 0.0
        r_p, u_p = paced
        if u_p + rest * r_p >= cpus:  # saturated below the paced rate: k6 costs its paced
            return cpus / (u_p / r_p + rest)
        slope = (cpus - u_p) / (cpus / top - r_p)  # k6's CPU per added request above it
        return (cpus - u_p + r_p * slope) / (slope + rest)


def _paced_point(demand: Demand, cpus: float) -> tuple[float, float] | None:
    """k6's paced point (its rate, the CPUs it kept busy), where it costs more a request than
    at its top rate (cpus / loadgen_us) and was measured below that rate; else None."""
    top, paced, rate = demand.loadgen_us, demand.loadgen_paced_us, demand.loadgen_paced_rps
    if not (top and paced and rate) or paced <= top or rate >= cpus * 1e6 / top:
        return None
    return rate, rate * paced / 1e6


def k6_busy(demand: Demand, rps: float, cpus: float) -> float:
    """k6's CPUs busy at a rate: linear from rest through its paced point, then linear to its
    own ceiling (all `cpus` at cpus / loadgen_us, as measured on gin's /hello); at
    loadgen_us a request without a paced point. The paced point sits above the line to the
    ceiling: per request, a k6 that waits for its answers costs more than a saturated one."""
    top = (demand.loadgen_us or 0.0) / 1e6
    paced = _paced_point(demand, cpus)
    if paced is None:
        return rps * top
    r_p, u_p = paced
    if rps <= r_p:
        return rps * u_p / r_p
    return u_p + (rps - r_p) * (cpus - u_p) / (cpus / top - r_p)


@dataclass(frozen=True)
class Prediction:
    rps: float | None
    latency_ms: float | None
    bound: str  # one of BOUNDS, or "" without a model
    ceilings: dict[str, float]  # each resource's asymptotic rps ceiling
    overloaded: bool = False  # open model above a ceiling

    @property
    def loadgen_rps_max(self) -> float | None:
        side = [v for k, v in self.ceilings.items() if k in LOAD_SIDE]
        return min(side) if side else None


NO_MODEL = Prediction(None, None, "", {})


def load_side_cpus(instance_cpus: list[list[int] | None], every: int) -> int:
    """The load side's CPUs: the distinct CPUs the k6 instances run on (n times one's CPUs
    when each has its own; on this 2-CPU host all instances share the load side's one, and
    so does the model). An instance not pinned may use every CPU of the host (`every`)."""
    if not instance_cpus or any(cpus is None for cpus in instance_cpus):
        return every
    return len({cpu for cpus in instance_cpus for cpu in cpus or []})


def slots(kind: str, endpoint: str, info: dict[str, Any]) -> float:
    """How many requests the server serves at once for this endpoint (inf: unbounded)."""
    capacity = (info.get("capacity") or {}).get(endpoint)
    value = math.inf if capacity is None else float(capacity)
    if kind == "cpu":
        value = min(value, cpu_parallelism(endpoint, info))
    return value


def db_pool(endpoint: str, info: dict[str, Any]) -> int | None:
    """Connections per worker in the pool this endpoint uses (/info's database object): the
    blocking driver's for /db-blocking on an event loop, else /db's (None: not stated)."""
    db = info.get("database")
    if not isinstance(db, dict) or not endpoint.startswith("db"):
        return None
    key = "blocking_pool" if endpoint == "db-blocking" and _loop_blocked(db) else "pool"
    value = db.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _loop_blocked(db: dict[str, Any]) -> bool:
    return db.get("blocking") == "event loop"


def pool_bound(endpoint: str, info: dict[str, Any]) -> bool:
    """Whether the endpoint's capacity is its connection pool (workers x pool: the pool is
    the smaller of it and the handler's own slots). Not /db-blocking on an event loop: the
    blocked loop serves one request per worker whatever the pool."""
    db = info.get("database")
    if not isinstance(db, dict) or (endpoint == "db-blocking" and _loop_blocked(db)):
        return False
    pool, workers = db_pool(endpoint, info), info.get("workers") or 1
    capacity = (info.get("capacity") or {}).get(endpoint)
    return pool is not None and capacity is not None and capacity == workers * pool


def cpu_parallelism(endpoint: str, info: dict[str, Any]) -> float:
    """CPUs the server's own work can use at once: its CPUs, and at most /info's worker_cpus
    per worker process (Node: one event loop; Python: one GIL) except for the work a pool
    does. Recordings made before /info stated it: Python one per worker."""
    cpus = float(info.get("cpus") or 1)
    per_worker = info.get("worker_cpus")
    if per_worker is None and info.get("language") == "python":
        per_worker = 1
    if per_worker is not None and endpoint != "cpu-pool":
        return min(cpus, float(info.get("workers") or 1) * float(per_worker))
    return cpus


def mva(n: int, delay_s: float, stations: list[tuple[float, float]]) -> tuple[float, list[float]]:
    """Exact MVA of a closed network: n customers, a pure delay, and queueing stations given
    as (demand s, servers m) with Seidmann's approximation for m > 1. Returns the throughput
    and each station's utilisation."""
    queued = [(d / m, d * (m - 1) / m) for d, m in stations if d > 0]
    delay = delay_s + sum(extra for _, extra in queued)
    q = [0.0] * len(queued)
    x = 0.0
    for k in range(1, n + 1):
        r = [d * (1 + qi) for (d, _), qi in zip(queued, q, strict=True)]
        cycle = delay + sum(r)
        if cycle <= 0:
            return math.inf, [0.0 for _ in stations]
        x = k / cycle
        q = [x * ri for ri in r]
    return x, [min(1.0, x * d / m) for d, m in stations]


def predict(
    kind: str,
    endpoint: str,
    demand: Demand,
    vus: int,
    rate: float | None,
    info: dict[str, Any],
    loadgen_cpus: float,
) -> Prediction:
    """The model's throughput, mean latency and limiting resource for one cell."""
    if kind not in ("sleep", "upstream", "cpu", "none", "db") or not info:
        return NO_MODEL
    d = (demand.server_cpu_ms or 0.0) / 1000.0
    s = demand.service_ms / 1000.0 if kind != "cpu" else 0.0
    z = (demand.overhead_ms or 0.0) / 1000.0
    load = demand.load_side_ms(loadgen_cpus) / 1000.0
    if kind == "cpu" and d <= 0:
        return NO_MODEL  # a CPU endpoint without its CPU time has nothing to predict from
    if s + d + z + load <= 0:
        return NO_MODEL  # /hello with nothing measured
    m_server = slots(kind, endpoint, info) if kind == "cpu" else cpu_parallelism(endpoint, info)
    c = slots(kind, endpoint, info) if kind != "cpu" else math.inf
    side = demand.load_side(loadgen_cpus)
    load_name = max(side, key=lambda k: side[k])  # a tie: k6 first
    slot_name = "db-pool" if kind == "db" and pool_bound(endpoint, info) else "slots"
    ceilings: dict[str, float] = {}
    # A slot (or pooled connection) is held for the wait, the server's CPU, the waits'
    # overshoot and the database's CPU for the request's queries.
    hold = s + d + ((demand.overshoot_ms or 0.0) + (demand.db_cpu_ms or 0.0)) / 1000.0
    if math.isfinite(c) and hold > 0:
        ceilings[slot_name] = c / hold
    if d > 0:
        ceilings["server-cpu"] = m_server / d
    if load > 0:
        ceilings[load_name] = loadgen_cpus / load
    stations = [(d, m_server), (load, loadgen_cpus)]
    slot = ceilings.get(slot_name, math.inf)
    if rate:
        return _open(float(rate), vus, s, z, stations, ceilings, slot)
    if vus == 1 and demand.loadgen_lone_us is not None:
        # a lone VU: its round trip is k6's (Z and how far k6's cycle differs from the
        # calibration client's), not Z plus k6's CPU per request, most of which overlaps it
        z = max(0.0, z + demand.loadgen_lone_us / 1e6)
        load -= side["loadgen"] / 1000.0
        stations = [(d, m_server), (load, loadgen_cpus)]
    ceilings["vus"] = vus / (s + d + z + load)
    x_cpu, _ = mva(vus, s + z, stations)
    share = group_share(demand, vus)
    if share and d > 0 and lockstep_applies(kind, endpoint, info):  # a group's CPU
        alone, _ = mva(vus, s + z, [(load, loadgen_cpus)])
        others = (demand.lockstep_cpu_ms or 0.0) / 1000.0 or d  # the group's requests' CPU
        group = vus / alone + (d + (vus - 1) * others) / m_server
        x_cpu = vus / (vus / x_cpu + share * max(0.0, group - vus / x_cpu))
    x = min(x_cpu, slot)
    bound = min(ceilings, key=lambda k: ceilings[k])
    return Prediction(x, vus / x * 1000.0, bound, ceilings)


def burst_times(k: int, slots: float, hold_s: float, lone_s: float) -> tuple[float, float]:
    """k requests released at once on `slots` slots, each held hold_s: they are answered in
    ceil(k / slots) rounds, a slot taking the next request as it frees, so a request of round
    r answers (r - 1) x hold_s later than a lone request (lone_s). Returns the mean answer time
    and the last one's (the makespan), in seconds: a staircase, not a steady state."""
    per_round = k if not math.isfinite(slots) else max(1, min(k, int(slots)))
    rounds = math.ceil(k / per_round)
    last = k - per_round * (rounds - 1)  # in the last round
    waited = (per_round * (rounds - 1) * (rounds - 2) / 2 + last * (rounds - 1)) / k
    return lone_s + hold_s * waited, lone_s + hold_s * (rounds - 1)


def predict_burst(
    kind: str,
    endpoint: str,
    demand: Demand,
    k: int,
    info: dict[str, Any],
    loadgen_cpus: float,
) -> Prediction:
    """A burst: k requests released at once, one per VU (a matrix cell's iterations = 1).
    Bound by its slots or its VUs, it is the staircase of burst_times (a lone request: S + d +
    Z + k6's cost; a slot held S + d + o + database CPU): latency is the mean answer time and
    rps is k over the makespan, as k6 counts a run that ends with its last answer. Bound by a
    CPU, the kernel and the GIL share it among the requests, which end together near the
    closed prediction's N / X: that prediction is kept."""
    closed = predict(kind, endpoint, demand, k, None, info, loadgen_cpus)
    if closed.rps is None or closed.bound not in ("slots", "db-pool", "vus"):
        return closed
    d = (demand.server_cpu_ms or 0.0) / 1000.0
    s = demand.service_ms / 1000.0
    z = (demand.overhead_ms or 0.0) / 1000.0
    hold = s + d + ((demand.overshoot_ms or 0.0) + (demand.db_cpu_ms or 0.0)) / 1000.0
    lone = s + d + z + demand.load_side_ms(loadgen_cpus) / 1000.0
    mean, makespan = burst_times(k, slots(kind, endpoint, info), hold, lone)
    return Prediction(k / makespan, mean * 1000.0, closed.bound, closed.ceilings)


# A batch of requests released at once is "answered together" when at least this share of
# it ends within TOGETHER_GAP of its last answer: a one-at-a-time server ends only its last
# C there. Not all: a request read in a loop iteration of its own is answered before its
# group (hypercorn, 8 at once: 103 ms, then 7 at 807-809 ms).
TOGETHER_SHARE = 0.75
TOGETHER_GAP = 0.1


def answered_together(ends_s: list[float], capacity: float) -> bool:
    """Whether a server answers its queue in one group (a loop that runs every ready handler
    before it writes any answer: hypercorn, Django's ASGI handler, both on a blocked loop),
    from the end times of a batch released at once: at least twice its capacity, all ending
    near the last. Needs a finite capacity (a queue to see)."""
    if not math.isfinite(capacity) or capacity < 1 or len(ends_s) < 2 * capacity:
        return False
    last = max(ends_s)
    late = sum(end >= (1 - TOGETHER_GAP) * last for end in ends_s)
    return last > 0 and late >= max(2 * capacity, TOGETHER_SHARE * len(ends_s))


def bursts_apply(kind: str, bound: str) -> bool:
    """Whether a cell whose server answers its queue together (answered_together) is predicted
    as bursts: where its limit is a slot a request holds (the slots; for a CPU endpoint, whose
    slots are its CPUs (slots()), the server's CPU: Django's ASGI /cpu ran 50 requests of
    0.18 s before it answered any, run 20261127-112913), not where a queue of its own (the
    VUs, k6, a pool behind the slots) sets the pace."""
    return bound == "slots" or (kind == "cpu" and bound == "server-cpu")


def burst_aligned_s(
    vus: int, capacity: float, hold_s: float, duration_s: float, grace_s: float, cap_s: float
) -> float | None:
    """A duration for a closed cell queued on slots that wait, chosen so that the window ends
    with a burst: the k-th period P = ceil(N / C) x hold due BURST_LANDING x kP before k6's
    grace ends, k the most whole periods within the planned duration and grace, but enough
    for MIN_REQUESTS. A server that answers its queue together is then counted k x N
    requests in k periods, one that answers as each hold ends the same rate, C / hold, so
    the prediction no longer rides on which one it does (the idle batch does not always
    tell: hypercorn read 0.64 and 1.50 of a one-burst prediction in two quick runs). None
    (keep the planned duration): a grace too short to land in, or no window within cap_s."""
    period = math.ceil(vus / capacity) * hold_s
    if period <= 0:
        return None
    least = math.ceil(MIN_REQUESTS / vus)
    bursts = max(least, math.floor((duration_s + grace_s) / period + 1e-9))
    while bursts >= least:
        landing = BURST_LANDING * bursts * period
        seconds = bursts * period + landing - grace_s
        if landing < grace_s and 0 < seconds <= cap_s:
            return round(seconds, 3)
        bursts -= 1
    return None


def burst_window(
    vus: int, capacity: float, hold_s: float, duration_s: float, grace_s: float
) -> tuple[float, float, int]:
    """A closed cell on a server that answers its queue together: the N VUs' requests are
    answered all at once every period P = ceil(N / C) x hold, so the window counts whole
    bursts. k6 starts no request after `duration_s` and waits up to `grace_s` for those in
    flight: the burst due after the duration counts if it comes within the grace, and the run
    lasts until it (else duration + grace). Returns (rps as k6 counts it, P, bursts)."""
    period = math.ceil(vus / capacity) * hold_s
    if period <= 0:
        return math.inf, period, 0
    bursts = math.floor(duration_s / period + 1e-9)
    ends = duration_s + grace_s
    following = (bursts + 1) * period
    if following <= ends:
        bursts += 1
        ends = following
    return vus * bursts / ends, period, bursts


def cpu_sensitivity(
    demand: Demand,
    rps_of: Callable[[Demand], float | None],
    error: float = SHORT_CPU_ERROR,
    factors: tuple[float, ...] | None = None,
) -> float:
    """How far the predicted rate (rps_of: a cell's prediction from a demand) moves, the
    largest relative change, when one of the CPUs per request the calibration measured (the
    server's, the upstream's, the database's) is off by ±error (or times each of factors);
    inf without a prediction. Without factors (a short window's readings), also when the
    lockstep share reads anything from 0 to 1: a group forms over the window's first rounds,
    so 0.5 s of the calibration's 10 ms waits read a test server on one event loop at
    0.27-1.0, 1.5 s at 1.0 every time (threads 0.08-0.21 either way)."""
    base = rps_of(demand)
    if not base:
        return math.inf
    changed = [
        replace(demand, **{name: value * factor})
        for name in MEASURED_CPUS
        if (value := getattr(demand, name))
        for factor in (factors or (1 - error, 1 + error))
    ]
    if factors is None:
        changed += [replace(demand, lockstep=share) for share in (0.0, 1.0)]
    worst = 0.0
    for other in changed:
        rps = rps_of(other)
        worst = max(worst, abs(rps / base - 1) if rps else math.inf)
    return worst


def speed_share(demand: Demand, rps_of: Callable[[Demand], float | None]) -> float:
    """How far the predicted rate rides on the CPUs' speed: its relative change per relative
    change of every CPU per request at once (the server's, k6's, the upstream's, the
    database's); 0 for a pure wait, 1 for a cell bound by one CPU. For the tolerance
    (lab.stability.tolerance): a slower host is slower everywhere."""
    base = rps_of(demand)
    if not base:
        return 0.0
    factor = 1.05
    slower = {
        name: getattr(demand, name) * factor for name in MEASURED_CPUS if getattr(demand, name)
    }
    for name in ("loadgen_us", "loadgen_paced_us", "loadgen_lone_us"):
        if getattr(demand, name):
            slower[name] = getattr(demand, name) * factor
    rps = rps_of(replace(demand, **slower)) if slower else base
    if not rps:
        return 0.0
    return min(1.0, abs(math.log(base / rps)) / math.log(factor))


def _open(
    rate: float,
    vus: int,
    s: float,
    z: float,
    stations: list[tuple[float, float]],
    ceilings: dict[str, float],
    slot: float,
) -> Prediction:
    # At most `vus` requests in flight: the closed network with N VUs is one more ceiling.
    x_vus, _ = mva(vus, s + z, stations)
    ceilings["vus"] = min(x_vus, slot)
    limit = min(ceilings, key=lambda k: ceilings[k])
    if rate >= ceilings[limit]:
        return Prediction(ceilings[limit], None, limit, ceilings, overloaded=True)
    residence = sum((d / m) / (1 - rate * d / m) + d * (m - 1) / m for d, m in stations if d > 0)
    latency = s + z + residence
    ceilings["open-rate"] = rate
    return Prediction(rate, latency * 1000.0, "open-rate", ceilings)


def efficiency(measured_rps: float | None, predicted_rps: float | None) -> float | None:
    if not measured_rps or not predicted_rps:
        return None
    return measured_rps / predicted_rps


def verdict(
    status: str,
    efficiency: float | None,
    censored: str = "",
    tolerance: float | None = None,
    interval: float | None = None,
) -> str:
    """The one verdict of a cell (or of a group's median): runner and report both call it.
    An error row gets no model verdict; a censored one is not judged. tolerance: the cell's
    (its row's `tolerance`; None: TOLERANCE, a row written before rows carried one).
    interval: with repeats, the half-width of the 95 % confidence interval of `efficiency`
    (their mean): the cell is as predicted when that interval overlaps 1 ± tolerance, but the
    two together never allow more than TOLERANCE_MAX (a wrong capacity misses by a factor,
    whatever the repeats' spread)."""
    tol = allowed(tolerance, interval)
    if status != "ok":
        return "error"
    if censored:
        return "censored"
    if efficiency is None:
        return "no model"
    if efficiency < 1 - tol:
        return "below model"
    if efficiency > 1 + tol:
        return "above model"
    return "as predicted"


def allowed(tolerance: float | None = None, interval: float | None = None) -> float:
    """The share of its prediction a cell may miss by (verdict()): its tolerance (None:
    TOLERANCE), widened by the half-width of its repeats' 95 % confidence interval, but
    never beyond TOLERANCE_MAX."""
    tol = TOLERANCE if tolerance is None else tolerance
    return max(tol, min(TOLERANCE_MAX, tol + interval)) if interval else tol


def planned_duration_s(
    duration_s: float,
    predicted_rps: float | None,
    cap_s: float = MAX_CELL_S,
    grace_s: float = 0.0,
    vus: int | None = None,
) -> tuple[float, str]:
    """How long to run a cell so it completes MIN_REQUESTS (at most MAX_CELL_S), and why it
    is censored if even that is too short ('' when it is not). A matrix may lower the cap
    (quick: a cell is lengthened to 7 s at most, so the run stays within its budget). k6
    counts what the grace (grace_s) lets finish too: a closed loop of `vus` VUs has requests
    in flight for up to one VU's cycle (vus / rps) after the duration, served at the same
    rate, so a cell at the cap holds rps x (cap + min(grace, cycle)) requests (quick's Python
    /cpu on a slow host: 5.4 rps, 38 in 7 s, 43 in the 8 s k6 ran; 45-50 completed)."""
    if not predicted_rps or predicted_rps <= 0:
        return duration_s, ""
    if MIN_REQUESTS / predicted_rps <= duration_s:
        return duration_s, ""
    # Plan for twice the minimum: a server slower than predicted still completes enough.
    needed = PLAN_MARGIN * MIN_REQUESTS / predicted_rps
    if needed <= cap_s:
        return float(math.ceil(needed)), ""
    in_flight_s = min(grace_s, vus / predicted_rps) if vus else 0.0
    window_s = cap_s + in_flight_s
    if predicted_rps * window_s >= MIN_REQUESTS:
        return cap_s, ""
    held = f"{cap_s:g} s (the cap)" + (f" and {in_flight_s:.2g} s of grace" if in_flight_s else "")
    return cap_s, (
        f"the model predicts {predicted_rps:.3g} rps: {held} hold "
        f"about {predicted_rps * window_s:.0f} < {MIN_REQUESTS} requests"
    )


def pool_rounds_s(
    duration_s: float,
    predicted_rps: float | None,
    bound: str,
    vus: int,
    capacity: float,
    cap_s: float = MAX_CELL_S,
) -> float:
    """How long a closed cell queued on its connection pool (bound db-pool, more VUs than the
    pool's C connections) runs so that k6's count holds MIN_REQUESTS rounds: its C
    connections answer together every hold, so the count moves by C requests at once, not
    one, and a window that ends just before a round or starts a connect late misses a whole
    round (measured: CONTRACT.md, 'A closed loop's rate'). At most cap_s; the duration as it
    was where it already holds them, or for any other cell."""
    if bound != "db-pool" or not predicted_rps or not math.isfinite(capacity) or vus <= capacity:
        return duration_s
    needed = math.ceil(10 * MIN_REQUESTS * capacity / predicted_rps) / 10  # tenths of a second
    return max(duration_s, min(needed, max(cap_s, duration_s)))


def too_few(requests: int | None) -> str:
    """Censoring seen afterwards: the cell completed too few requests to count its rate."""
    if requests is not None and requests < MIN_REQUESTS:
        return f"only {requests} requests completed (< {MIN_REQUESTS}): the rate is not measured"
    return ""


def still_compiling(compiling_pct: float | None, bound: str) -> str:
    """Censoring seen afterwards: the JIT compiled during the load (its compiler threads' share
    of the server's CPU, compiling_pct) on a cell bound by the server's CPU (its prediction is
    that CPU's ceiling), so the server's CPU per request fell while it was measured and the
    load holds no steady state to predict (quick's 4-s warm-up on the JVM's /hello and /cpu:
    CONTRACT.md, 'Warm-up'). A cell bound by a wait is judged: its prediction hardly moves
    with that CPU (jdkhttp's /sync, /async, /gather at 100 VUs, warmed until steady, compiled
    24-38 % of it under the load and read 0.98-1.00 of the model)."""
    if bound == "server-cpu" and compiling_pct is not None and compiling_pct > COMPILING * 100:
        return (
            f"the JIT was still compiling during the load ({compiling_pct:.0f} % of the "
            f"server's CPU in its compiler threads): no steady state to predict"
        )
    return ""


def _num(v: float | None, unit: str) -> str:
    if v is None:
        return "?"
    return f"{v:,.0f} {unit}" if v >= 100 else f"{v:.3g} {unit}"


def _kernel(r: Any) -> str:
    """The kernel's work for the packets beside a load-side bound, where it was read."""
    kernel = getattr(r, "load_kernel_ms", None)
    return f" + kernel {_num(kernel, 'ms')}" if kernel else ""


def limit_text(bound: str, r: Any) -> str:
    """The limiting resource with the measured number behind it, for the report; for a cell
    judged off the model, what the load showed of that resource beside it (observed())."""
    f = _num
    match bound:
        case "slots":
            text = f"slots: {r.capacity} per ({f(r.service_ms, 'ms')} wait + CPU)"
            if getattr(r, "burst_period_s", None):
                text += f", answered in bursts every {r.burst_period_s:.3g} s"
        case "db-pool":
            workers = r.workers or 1
            rest = sum(v or 0.0 for v in (r.server_cpu_ms, r.overshoot_ms, r.db_cpu_ms))
            text = (
                f"pool {r.db_pool if r.db_pool is not None else '?'} × {workers} "
                f"worker{'' if workers == 1 else 's'} = {r.capacity} at once, "
                f"{f(r.service_ms, 'ms')} + {f(rest, 'ms')} each"
            )
        case "server-cpu":
            text = f"server CPU {f(r.server_cpu_ms, 'ms')}/request"
        case "loadgen":
            anew = " on a new connection each" if getattr(r, "loadgen_reconnects", None) else ""
            text = (
                f"{load_generators(r)}k6 {f(r.loadgen_us, 'µs')}/request{anew} "
                f"→ {f(r.loadgen_rps_max, 'rps')} max"
            )
        case "upstream-cpu":
            text = f"upstream {f(r.upstream_cpu_ms, 'ms')}{_kernel(r)}/request on k6's CPUs"
        case "db-cpu":
            text = (
                f"database {f(r.db_cpu_ms, 'ms')}{_kernel(r)}/request on k6's CPUs "
                f"→ {f(r.loadgen_rps_max, 'rps')} max"
            )
        case "vus" if r.vus == 1 and getattr(r, "loadgen_lone_us", None) is not None:
            lone = r.loadgen_lone_us  # a lone VU's cycle, every part of it
            k6 = f"+ {f(lone, 'µs')} k6's" if lone >= 0 else f"- {f(-lone, 'µs')}: k6's is quicker"
            text = (
                f"1 VU / ({f(r.service_ms, 'ms')} + {f(r.server_cpu_ms, 'ms')} CPU + "
                f"{f(r.overhead_ms, 'ms')} round trip {k6})"
            )
        case "vus":
            text = f"{r.vus} VUs / ({f(r.service_ms, 'ms')} + {f(r.overhead_ms, 'ms')} round trip)"
        case "open-rate":
            text = f"open rate {r.rate}/s"
        case _:
            return bound
    if verdict("ok", r.efficiency, "", r.tolerance) in ("below model", "above model"):
        seen = "; ".join(p for p in (observed(bound, r), compiling_text(r)) if p)
        if seen:
            text += f" · under the load: {seen}"
    return text


def compiling_text(r: Any) -> str:
    """A JIT's compiler threads' share of the server's CPU during the load, above COMPILING
    (the row's jit_compiling_pct), as a CPU's worth: beside a miss, what ran on the request
    threads' CPU that the calibration left out of d; '' elsewhere. A cell bound by that CPU is
    censored instead (still_compiling)."""
    pct = getattr(r, "jit_compiling_pct", None)
    if pct is None or pct <= COMPILING * 100:
        return ""
    busy = getattr(r, "server_cpu_pct", None)
    cpus = f", {pct / 100 * busy / 100:.2f} of a CPU" if busy else ""
    return f"its JIT's compilers {pct:.0f} % of the server's CPU{cpus}"


def load_generators(r: Any) -> str:
    """The loadgen bound's words for a cell split into several k6 instances (--loadgens): how
    many, on how many CPUs (the load side's ceiling is those CPUs'); '' for one instance."""
    n = getattr(r, "loadgens", None) or 1
    if n < 2:
        return ""
    cpus = len((getattr(r, "k6_cpus", "") or "").split())
    on = f" on {cpus} CPU{'' if cpus == 1 else 's'}" if cpus else ""
    return f"{n} load generators{on}: "


def observed(bound: str, r: Any) -> str:
    """What the cell's own load showed of its limiting resource, in the terms of the number
    the prediction was made from: an explanation beside a miss, never an input of the
    prediction. From the sampler's CPU shares and k6's counts (utilisation law: CPU time per
    request = CPU share / rate; Little's law: a slot's hold = C / rate)."""
    rps = r.rps
    if not rps:
        return ""

    def per_request(pct: float | None, scale: float, unit: str) -> str:
        return "" if pct is None else _num(pct / 100.0 / rps * scale, unit) + "/request"

    match bound:
        case "server-cpu":
            text = per_request(r.server_cpu_pct, 1000.0, "ms")
            if text and r.server_cpu_bound is False and r.lat_avg_ms is not None:
                # its CPUs had time to spare: what the load was short of is a request's time
                text += (
                    f" at {r.server_cpu_pct:.0f} % of a CPU, not saturated: a request took "
                    f"{_num(r.lat_avg_ms, 'ms')} "
                    f"(predicted {_num(r.predicted_latency_ms, 'ms')})"
                )
            return text + _collector(r, bound) if text else ""
        case "upstream-cpu":
            return per_request(r.upstream_cpu_pct, 1000.0, "ms")
        case "db-cpu":
            return per_request(r.db_cpu_pct, 1000.0, "ms")
        case "loadgen":
            if r.k6_cpu_pct is None:
                return ""
            each = getattr(r, "k6_cpu_pcts", "")
            return (
                f"k6 {r.k6_cpu_pct:.0f} % of a CPU busy{f' ({each})' if each else ''}, "
                f"{per_request(r.k6_cpu_pct, 1e6, 'µs')}"
            )
        case "slots" | "db-pool":
            if not r.capacity:
                return ""
            held = "slot" if bound == "slots" else "connection"
            # a hold the model takes for CPU alone (no wait): the CPU the load used beside it
            cpu = "" if r.service_ms else per_request(r.server_cpu_pct, 1000.0, "ms")
            text = f"each {held} held {_num(r.capacity / rps * 1000.0, 'ms')}/request"
            return f"{text} (server CPU {cpu})" if cpu else text
        case "vus" | "open-rate":
            if r.lat_avg_ms is None:
                return ""
            group = lockstep_ms(r) if bound == "vus" else None
            beside = "" if group is None else f"; {_num(group, 'ms')} in lockstep"
            return (
                f"a request took {_num(r.lat_avg_ms, 'ms')} "
                f"(predicted {_num(r.predicted_latency_ms, 'ms')}{beside})"
            ) + (_collector(r, bound) if bound == "vus" else "")
    return ""


def _collector(r: Any, bound: str) -> str:
    """The garbage collector's share of the server's CPU under the load beside the
    calibration's, where the server timed it (/info's collector: Python's, V8's), for a cell
    its VUs bound the wait its pauses made at a random moment (the row's gc_wait_ms), and what
    the model says with them (the row's collector_rps: at_collector_share, pause_hold_ms);
    '' elsewhere."""
    gc = getattr(r, "gc_pct", None)
    if gc is None:
        return ""
    before = getattr(r, "gc_calibration_pct", None)
    parts = [] if before is None else [f"{before:.0f} % in the calibration"]
    wait = getattr(r, "gc_wait_ms", None) if bound == "vus" else None
    if wait is not None:
        parts.append(f"its pauses {_num(wait, 'ms')} of wait at a random moment")
    at_share = getattr(r, "collector_rps", None)
    if parts and at_share and r.rps:
        said = _num(at_share, "rps")
        with_ = "its share and pauses" if wait is not None else "its share"
        parts.append(f"at {with_} here the model says {said}: {r.rps / at_share:.2f} of it")
    then = f" ({'; '.join(parts)})" if parts else ""
    return f"; the collector {gc:.0f} % of the server's CPU{then}"


def at_collector_share(
    demand: Demand, load_pct: float | None, calibration_pct: float | None
) -> Demand | None:
    """The demand had the calibration seen the collector take the share of the server's CPU
    it took under the load: the server's CPU per request (SERVER_CPUS) without the
    calibration's collector, with the load's, d x (1 - c) / (1 - l). The load's collector
    grows with the requests in flight and how long their objects live, which the
    calibration does not reproduce: what the model says with it is an explanation beside a
    cell's verdict, read from the load itself, never its prediction (CONTRACT.md, "Python's
    cyclic garbage collector"). None where a share is unknown or the load's is all of it."""
    if load_pct is None or calibration_pct is None or load_pct >= 100 or calibration_pct >= 100:
        return None
    if not demand.server_cpu_ms:
        return None
    scale = (1 - calibration_pct / 100) / (1 - load_pct / 100)
    scaled = {f: v * scale for f in SERVER_CPUS if (v := getattr(demand, f))}
    return replace(demand, **scaled)


def pause_hold_ms(wait_ms: float | None, busy: float | None) -> float | None:
    """How much longer a request took for its worker's collection pauses: the mean residual
    of a pause in progress at a random moment (wait_ms: lab.run.collector.pause_wait_ms) and
    the work that queued behind it, wait / (1 - busy): the pauses' part of the residual work
    in Pollaczek-Khinchine's mean wait. busy: the worker's CPU utilization under the load,
    0-1. None without either, or on a saturated worker (SERVER_BOUND_PCT), whose CPU's queue
    already holds them. Read from the load: an explanation, never a prediction."""
    if wait_ms is None or busy is None or not 0.0 <= busy < SERVER_BOUND_PCT / 100.0:
        return None
    return wait_ms / (1.0 - busy)


def with_pauses(demand: Demand, hold_ms: float) -> Demand:
    """The demand with each request held hold_ms longer outside the server's CPU (in Z)."""
    return replace(demand, overhead_ms=(demand.overhead_ms or 0.0) + hold_ms)


def lockstep_applies(kind: str, endpoint: str, info: dict[str, Any]) -> bool:
    """Whether a measured lockstep share moves the prediction (group_endpoint)."""
    return group_endpoint(kind, endpoint, info) is not None


def group_endpoint(kind: str, endpoint: str, info: dict[str, Any]) -> str | None:
    """The endpoint whose calibration's lockstep shares (and CPU per request) predict a cell
    of this one; None where no group moves the prediction. A group forms for an unbounded
    endpoint that waits (a bounded one queues for its slots, which the share's comparison
    leaves out; a CPU endpoint's group is its queue already) on a server whose worker runs one
    request's steps at a time (an event loop, a GIL: /info worker_cpus 1, Python's by
    default). Where requests run in parallel there is no group to wait for: Go's and the
    JVM's /upstream read shares of 0.31-0.58 (the fan-out's own spread) and 1.13-1.15 of the
    model with them (io run 20261125-051408). A request that waits once: its own. One whose
    n waits come one after another (the contract's service n*ms: /sequential, /upstream-seq)
    or all at once (n concurrent waits: /gather, /upstream): GROUP_ENDPOINT's, a single
    wait's. Its own calibration reads a share from the spread of its n wake-ups, as on Go,
    which the load does not show; the group a server does keep (Django's) forms at the
    request's ends, not at each wait, and waits for their CPU, a single wait's request's
    (CONTRACT.md, 'The capacity model', lockstep)."""
    per_worker = info.get("worker_cpus")
    if per_worker is None and info.get("language") == "python":
        per_worker = 1
    if per_worker != 1 or kind in CPU_KINDS or not math.isinf(slots(kind, endpoint, info)):
        return None
    contract = load()
    spec = contract[endpoint] if endpoint in contract.names() else None
    waits_once = spec is None or not (spec.service == "n*ms" or spec.concurrent)
    return endpoint if waits_once else GROUP_ENDPOINT


def lockstep_share(
    k: int, delay_ms: float, cpu_ms: float | None, client_ms: float, cycle_ms: float
) -> float | None:
    """Where a closed loop of k connections sat between MVA's queue for the server's CPU (0)
    and lockstep (1: each request waited for all k requests' CPU), from its measured cycle
    (k x wall / requests): the calibration's connections, each waiting delay_ms a request
    (the calibration's wait, the round trip, the overshoot), the client's own CPU per request
    a station of its own. None where the two cannot be told apart: no wait, one connection,
    no CPU measured, or the two less apart than k times the client's CPU per request (its
    threads share one GIL: their own convoy can look like a group of that size)."""
    if k < 2 or delay_ms <= 0 or not cpu_ms:
        return None
    client = [(client_ms / 1000.0, 1.0)]
    queued = k / mva(k, delay_ms / 1000.0, [(cpu_ms / 1000.0, 1.0), *client])[0] * 1000.0
    group = k / mva(k, delay_ms / 1000.0, client)[0] * 1000.0 + k * cpu_ms
    if group - queued < max(0.1, k * client_ms):
        return None
    return min(1.0, max(0.0, (cycle_ms - queued) / (group - queued)))


def wide_share_applies(endpoint: str) -> bool:
    """Whether a second lockstep share is read for the endpoint: not for a plain synchronous
    handler (the contract's x-lab.handler "sync"), on an event loop a thread of its own a
    request (Django's ASGI), whose group forms under the load, its threads taking turns at the
    GIL, which neither reading shows (2-6 requests of 8 or of 32; its loads wait for 25-80 of
    100): its first share applies as it is."""
    contract = load()
    return endpoint in contract.names() and not contract[endpoint].synchronous


def group_share(demand: Demand, vus: int) -> float | None:
    """The lockstep share a closed cell of `vus` VUs is predicted with. The calibration's
    first share (`lockstep`, of min(vus, CONNECTIONS) connections) up to CONNECTIONS VUs and
    where no second one was read (`lockstep_wide_read`); with
    a second share (`lockstep_wide`, of min(vus, WIDE_CONNECTIONS)), the groups' sizes
    (share x connections) tell whether a group grows with the connections: one at least
    GROUP_GROWS times the first keeps the first share (a group of all N, as Django's thread
    hops make); else the group keeps its size, the larger of the two, which is a smaller
    share of more VUs (hypercorn's: its loads at 30, 50 and 100 VUs wait for 8-13 requests'
    CPU, where the first share applied to all of them said 20-60). A second share read but
    not told from the calibration client's own convoy (lockstep_share: None) keeps the first
    one's size too: a server whose requests' CPU is that close to the client's (aiohttp's,
    0.1-0.2 ms) reads a first share from that convoy as well, and its loads show no group
    that grows (CONTRACT.md, 'The capacity model', lockstep)."""
    first, wide = demand.lockstep, demand.lockstep_wide
    if first is None or vus <= CONNECTIONS or (wide is None and not demand.lockstep_wide_read):
        return first
    narrow = first * CONNECTIONS
    broad = 0.0 if wide is None else wide * min(vus, WIDE_CONNECTIONS)
    if broad >= GROUP_GROWS * narrow:  # none read: 0, so a group of the first's size
        return first
    return min(1.0, max(narrow, broad) / vus)


def lockstep_ms(r: Any) -> float | None:
    """A closed loop's request time if its VUs moved as one group, each request waiting for
    every request's CPU (N·d, the pessimistic bound of operational analysis, where the model
    takes a request's own d and the queue MVA expects): an explanation beside a miss, from
    the calibration's numbers. A server whose request makes several trips through its event
    loop (Django's thread hops, hypercorn's iterations) advances a group's requests together,
    so a group stays one (CONTRACT.md, 'The capacity model'). None below 2 VUs or without d."""
    if not r.vus or r.vus < 2 or not r.server_cpu_ms or r.service_ms is None:
        return None
    side = Demand(0.0, None, None, r.upstream_cpu_ms, r.loadgen_us, None, r.db_cpu_ms)
    others = getattr(r, "lockstep_cpu_ms", None) or r.server_cpu_ms  # the group's requests'
    group = r.server_cpu_ms + (r.vus - 1) * others
    return r.service_ms + (r.overhead_ms or 0.0) + side.load_side_ms() + group
