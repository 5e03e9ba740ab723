"""Runs a list of cells into a run folder. One cell: a fresh server pinned to its own CPUs,
/health, a short warm-up, the measured k6 run (with the server tree and k6 sampled), then a
stop that must leave nothing behind. A failing cell becomes an error row; the run goes on.
The services cells wait on are the run's, started when a cell first needs them, on the load
side's CPUs, and again when one died: the upstream service and the database (one per run,
in its folder, unless --db-url names the user's)."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from lab import interpreters, model, rundir, stability
from lab.contract import load
from lab.matrix import Cell, parse_duration
from lab.proc import children, cpuspeed, interrupt, netns, probe, server
from lab.proc.database import Database, DatabaseError, DatabaseUnavailable, display_url
from lab.proc.sampler import Sampler
from lab.record import CellResult, utc_now
from lab.run import calibrate, collector, loadgen, segments, warmup
from lab.run.progress import Progress, clock
from lab.rundir import RunDir
from lab.targets import discover, find

# What a cell costs beyond its load and a JIT's warm-up (WARM_UP_SHARE, WARM_UP_S), by its
# server's language: a target's wall time in a quick run (from its first cell's start to the
# next target's) less its cells' k6 runs, per cell, k6's reference run (LOADGEN_COST_S) and the
# JVM's Maven build (skipped when up to date: jvm/build) taken out. Go's and Java's are the
# medians of quick runs 20261127-221447 to 20261128-092110 (Go 1.3-1.6; Java 11.0 once Spring
# Boot started from its class-data archive, its warm-up's 3 s at quick's cap of 4 taken out);
# Node's and Python's are the means of runs 20261128-113828 and 20261128-123359, with /cpu at
# n = 200,000 and each capacity asked once (Node 4.0 and 4.9 with its warm-up, 2.5 s of it;
# its cells' own 1.9 and 2.6 in quick runs 20261202-165800 and -202204; Python 3.7 and 3.6).
# It holds the start to /health (Go 0.05 s, Node 0.3-0.5, Python 0.7-1.8, Spring Boot 5 on
# one CPU; the next cell's begins beside this one's stop), the calibration (0.5 s of
# requests, or 1.5 s where the CPU per request matters: 0.8-1.7 s), the timeline's batch,
# k6's start and summary (0.4-0.5 s) and the stop (Python 0.2-0.8 s; a loop that /blocking
# saturated first answers its queue, 2.3-4.1 s). The io matrix's cells cost more (a second
# lockstep share, N VUs x n calls warmed up: Python 9.5 s, Node 6.6 in io run
# 20261202-170943): a cell run before on this machine is estimated at what it took then
# (rundir.past_cell_seconds; the one that ran first at its VU count holds k6's reference run
# too, LOADGEN_COST_S counted twice), these figures are for the others.
OVERHEAD_S = {"go": 1.4, "node": 1.9, "python": 3.7, "java": 8.0}
# A JIT's warm-up (lab.run.warmup) runs until the server is steady, at most the matrix's cap
# (warm_up_max; 30 s by default). A JVM's mostly reach the cap, so a share of it: 22.4 s of 30
# on average over the JVM's 16 cells of io run 20261202-170943 (two skipped), 3.8 and 2.1 s of
# 4 in quick runs 20261202-165800 and -202204. V8's end steady sooner, so seconds: 2.5 s on
# average in that io run, 1.5 and 1.3 in the quick runs.
WARM_UP_SHARE = {"java": 0.75}
WARM_UP_S = {"node": 2.5}
# k6's own cost per request, measured once per run at each VU count (lab.run.calibrate:
# its reference run of 2 s, its paced run of 3 s and their starts): 7.8 s. A run with a
# server that closes its connections measures it again, reconnecting (not in the estimate:
# which servers close is known once they answer).
LOADGEN_COST_S = 8.0
# A language not measured yet: the costliest measured (a JVM's start and its JIT's warm-up);
# its own figure replaces it once measured.
OVERHEAD_UNMEASURED_S = max(OVERHEAD_S.values())
TIMELINE_KINDS = ("sleep", "cpu")
TIMELINE_MAX = 24  # requests in one timeline batch
# A cell with more failed requests than this share is an error, never a verdict: failed
# requests distort both throughput (a 502 without an upstream returns in microseconds) and
# latency (a timeout holds a VU for the whole TIMEOUT). 0.1 % is the bar well-kept benchmark
# suites use to drop a run; a 2 s cell of 20 requests thus tolerates no failure at all.
FAILED_SHARE_MAX = 0.001


@dataclass
class Options:
    url: str | None = None  # benchmark a running server: no local lifecycle
    port: int | None = None  # fixed port for local servers (default: a free one per cell)
    canary_rate: int = loadgen.CANARY_RATE
    health_timeout: float = 30.0
    pin: bool = True
    # k6 ends at duration + GRACEFUL_STOP (3 s) + its summary; beyond this margin it hung.
    k6_margin_s: float = 60.0
    max_cell_s: float = model.MAX_CELL_S  # the longest a cell may be lengthened (a matrix's)
    warm_up_max_s: float = warmup.MAX_S  # the longest a JIT's warm-up may take (a matrix's)
    # k6's grace for the requests in flight when the duration ends (a matrix's graceful_stop;
    # None: lab.js's GRACEFUL_STOP, 3 s)
    graceful_stop_s: float | None = None
    # --db-url: the user's PostgreSQL instead of the embedded one (nothing started or pinned)
    db_url: str | None = None
    # --loadgens: k6 instances a cell's load is split into (execution segments, merged rows)
    loadgens: int = 1
    # --netns: each instance in a network namespace of its own (lab.proc.netns), the server
    # on the namespaces' bridge; --rtt-ms: netem's delay on each of their links
    netns: bool = False
    rtt_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        """For run.json: the database's URL without its password (--resume takes it again)."""
        data = asdict(self)
        if self.db_url:
            data["db_url"] = display_url(self.db_url)
        return data


def cpu_split(pin: bool = True) -> tuple[list[int] | None, list[int] | None]:
    """Disjoint CPU sets for the server and the load side (k6, the upstream service).
    The server gets the larger half; with a single CPU nothing is pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return None, None
    half = math.ceil(len(cpus) / 2)
    return cpus[:half], cpus[half:]


def instance_cpus(k6_cpus: list[int] | None, n: int) -> list[list[int] | None]:
    """The CPUs each of n k6 instances is pinned to: a share of the load side's CPUs of its
    own when there are at least n, else one CPU each, taken in turn (instances then share:
    on two CPUs, all of them run on the load side's one). None: not pinned."""
    if not k6_cpus:
        return [None] * n
    if len(k6_cpus) < n:
        return [[k6_cpus[i % len(k6_cpus)]] for i in range(n)]
    size, extra = divmod(len(k6_cpus), n)
    shares, at = [], 0
    for i in range(n):
        take = size + (i < extra)
        shares.append(k6_cpus[at : at + take])
        at += take
    return shares


def overhead_s(language: str) -> float:
    """What a cell of a server in this language costs beyond its load (OVERHEAD_S)."""
    return OVERHEAD_S.get(language, OVERHEAD_UNMEASURED_S)


def warm_up_s(language: str, cap_s: float = warmup.MAX_S) -> float:
    """How long a cell of a server in this language warms up, the matrix's cap cap_s given
    (WARM_UP_SHARE, WARM_UP_S; 0 without a JIT); a language not measured yet, the costliest."""
    if language not in OVERHEAD_S:
        return max(WARM_UP_SHARE.values()) * cap_s
    if language in WARM_UP_SHARE:
        return WARM_UP_SHARE[language] * cap_s
    return min(cap_s, WARM_UP_S.get(language, 0.0))


# What a probe of the CPUs' speed between cells costs: its loop and its processes' start.
PROBE_COST_S = stability.PROBE_S + cpuspeed.START_DELAY_S
# A probe during which the idle server used more than this share of a CPU is dropped.
PROBE_SERVER_MAX = 0.05


def cell_estimates(
    cells: list[Cell],
    languages: dict[str, str] | None = None,
    warm_up_max_s: float = warmup.MAX_S,
    past: dict[str, float] | None = None,
) -> list[float]:
    """How long each cell should take: what the same cell took in an earlier run on this
    machine (past: rundir.past_cell_seconds), else its load, its language's overhead and its
    JIT's warm-up at the run's cap. languages: target -> language (default: the discovered
    targets')."""
    if languages is None:
        languages = {t.name: t.language for t in discover()}
    past = past or {}

    def one(c: Cell) -> float:
        known = past.get(c.key)
        if known is not None:
            return known
        language = languages.get(c.target, "")
        return c.expected_s + overhead_s(language) + warm_up_s(language, warm_up_max_s)

    return [one(c) for c in cells]


def estimate_s(
    cells: list[Cell],
    languages: dict[str, str] | None = None,
    warm_up_max_s: float = warmup.MAX_S,
    past: dict[str, float] | None = None,
) -> float:
    """How long the cells should take: each one's (cell_estimates), the host's stability
    check before them and its probes between them, and k6's own cost measured once at each
    of their VU counts."""
    if not cells:
        return 0.0
    cells_s = sum(cell_estimates(cells, languages, warm_up_max_s, past))
    probes = min(len(cells) - 1, int(cells_s / stability.PROBE_EVERY_S))
    check_s = stability.check_seconds() + cpuspeed.START_DELAY_S
    loadgen_s = LOADGEN_COST_S * len({c.vus for c in cells})
    return cells_s + check_s + loadgen_s + probes * PROBE_COST_S


def _one_line(text: str, limit: int = 600) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())[-limit:]


@dataclass
class Attempt:
    """One attempt at a cell (a retried cell is a new one): its moving parts, as its stages
    fill them in, so that the clean-up finds whatever was started, whichever stage failed."""

    cell: Cell
    endpoint: Any  # the contract's endpoint of the cell
    row: CellResult
    stem: str  # the file names of the cell's logs and summary
    started: float  # time.monotonic() when the cell began
    env: interpreters.Interpreter | None = None  # a local Python server's environment
    proc: server.ServerProcess | None = None  # the local server (None with --url)
    base: str = ""  # the server's URL
    info: dict[str, Any] = field(default_factory=dict)  # its /info
    upstream: server.ServerProcess | None = None  # the upstream service an /upstream cell calls
    database: Database | None = None  # the run's database a db cell queries (embedded only)
    k6run: loadgen.LoadGroup | None = None  # the cell's k6 instances
    sampler: Sampler | None = None
    demand: model.Demand | None = None  # what the cell was predicted from (Runner._plan)
    queried: Database | None = None  # the database a db cell's server queries (the user's too)
    # Started beside the previous cell's stop (Runner._prestart): the thread starting the
    # server, and what it raised.
    starting: threading.Thread | None = None
    start_error: BaseException | None = None


class Runner:
    def __init__(self, run: RunDir, options: Options, database: Database | None = None) -> None:
        """database: the user's server (Database.external of --db-url); None: the embedded
        one, started when a cell first needs it."""
        self.run = run
        self.options = options
        self.contract = load()
        self.server_cpus, self.k6_cpus = cpu_split(options.pin and not options.url)
        self.instance_cpus = instance_cpus(self.k6_cpus, options.loadgens)
        # --netns: the load hosts' namespaces, made when the run starts, removed at its end
        self.network: netns.Network | None = None
        self.upstream: server.ServerProcess | None = None
        # run.json's `upstream` once a cell used it: its CPUs, scheduling and starts (a
        # restarted one counts again)
        self.upstream_record: dict[str, Any] | None = None
        self.upstream_starts = 0
        self.database = database
        # run.json's `database`: the server's info once a cell used it, how many times a
        # fresh one replaced one that died, how the last one stopped
        self.database_info: dict[str, Any] | None = None
        self.database_restarts = 0
        self.database_stop: dict[str, Any] | None = None
        self.servers: dict[str, Any] = {}
        # k6's cost per request, measured once per VU count (it grows with the VUs) and per
        # connection handling: whether it reconnects for every request (a closing server)
        self.loadgen: dict[tuple[int, bool], calibrate.LoadgenCost] = {}
        # the next cell, its server started while the last one's stopped (cell's following)
        self.upcoming: Attempt | None = None
        # the CPUs' speed: the check before the first cell, the probes between cells since
        # (lab.stability); run.json's `stability` once measured
        self.speed_check: dict[str, Any] | None = None
        self.speed_probes: list[list[float]] = []
        self.stability: dict[str, Any] | None = None
        # what each cell's tolerance rides on (stability.tolerance's arguments after the
        # stability: share, calibration's and load's seconds, k6's own spread), by cell id:
        # set before its load, judged again with the whole run's stability at its end
        self.tolerance_inputs: dict[str, tuple[float, float, float, float]] = {}
        self.started = time.monotonic()
        self.last_probe = self.started

    # --- the run ------------------------------------------------------------------------

    def execute(self, cells: list[Cell], done: set[str]) -> list[CellResult]:
        """Run every cell whose id is not in `done`; returns this session's rows."""
        todo = [c for c in cells if c.id not in done]
        rows: list[CellResult] = []
        mine = os.sched_getaffinity(0)
        if self.k6_cpus:
            # The runner (its sampler, probes and calibration) measures: it sits with k6,
            # leaving the server's CPUs to the server alone.
            os.sched_setaffinity(0, self.k6_cpus)
        try:
            if self.options.netns:  # a network that cannot be made is the run's one line
                self._start_network()
            # first: a database that cannot start is the run's one line
            if any(self.contract[c.endpoint].kind == "db" for c in todo):
                self._start_database()
            # what these cells took before on this machine, where they ran before
            past = rundir.past_cell_seconds(self.run.path.parent, skip=self.run.run_id)
            cap = self.options.warm_up_max_s
            print(
                f"run {self.run.run_id}: {len(todo)} cells to run"
                + (f" ({len(done)} already done)" if done else "")
                + f", about {clock(estimate_s(todo, None, cap, past))}; "
                f"server CPUs {self.server_cpus or 'all'}, k6 CPUs {self.k6_cpus or 'all'}",
                file=sys.stderr,
            )
            self._check_speed()
            progress = Progress(cell_estimates(todo, None, cap, past))
            for i, cell in enumerate(todo):
                progress.show(cell.id, self._host_note())
                index = len(done) + len(rows) + 1
                following = todo[i + 1] if i + 1 < len(todo) else None
                row = self.cell(cell, index, self.upcoming, following)
                self.run.append(row)
                rows.append(row)
                progress.advance(_brief(row))
                interrupt.check()  # a signal during the cell's clean-up ends the run here
            self._judge_at_the_end(rows)
        finally:
            with interrupt.shielded():
                if self.upcoming:  # started for a cell the run did not reach
                    _discard(self.upcoming)
                    self.upcoming = None
                if self.upstream:
                    self.upstream.stop()
                    self.upstream = None
                self._stop_database()
                self._stop_network()
                # back where it was: a caller that goes on (a test session) must not keep
                # k6's CPUs, nor the processes it starts after
                os.sched_setaffinity(0, mine)
        return rows

    # --- the load hosts' network (--netns) ----------------------------------------------------

    def _start_network(self) -> None:
        """One namespace per k6 instance, and the extra round trip a request from them takes
        (the model adds it to Z: the calibration runs from the root namespace)."""
        net = netns.create(self.options.loadgens, self.options.rtt_ms)
        self.network = net  # removed at the run's end, whatever happens next
        self.network = replace(net, rtt_ms=round(netns.probe_rtt_ms(net), 3))
        print(
            f"load hosts: {net.count} namespace(s) {net.namespace(0)}.. on bridge {net.bridge} "
            f"({net.subnet}), the server on {net.server_address}; round trip "
            f"+{self.network.rtt_ms:g} ms beyond the root's"
            + (f" (netem delay {net.delay_ms:g} ms)" if net.delay_ms else ""),
            file=sys.stderr,
        )

    def _stop_network(self) -> None:
        net, self.network = self.network, None
        if net is None:
            return
        left = netns.remove(net)
        if left:
            print(f"lab: could not remove {', '.join(left)}", file=sys.stderr)

    def _host(self) -> str:
        """The address local servers listen on: the load hosts' bridge, or loopback."""
        return self.network.server_address if self.network else server.HOST

    @property
    def rtt_ms(self) -> float | None:
        """What a request's round trip from the load hosts adds to the calibration's (None:
        k6 runs in the root namespace, as the calibration does)."""
        return self.network.rtt_ms if self.network else None

    # --- the host's speed -----------------------------------------------------------------

    def _speed_cpus(self) -> list[int]:
        if self.server_cpus or self.k6_cpus:
            return sorted({*(self.server_cpus or []), *(self.k6_cpus or [])})
        return sorted(os.sched_getaffinity(0))

    def _check_speed(self) -> None:
        """The CPUs' speed before the first cell (lab.stability): run.json and one line. A check
        that fails leaves the run without it (every cell judged at ±5 %, which says so)."""
        try:
            chunks = cpuspeed.measure(self._speed_cpus(), stability.check_seconds())
        except (cpuspeed.SpeedError, OSError, ValueError) as exc:
            print(f"host stability: not measured ({_one_line(str(exc), 200)})", file=sys.stderr)
            return
        self.speed_check = stability.check_record(chunks, utc_now())
        self.last_probe = time.monotonic()
        self._record_stability()
        print(stability.describe(self.stability), file=sys.stderr)

    def _probe_due(self) -> bool:
        return (
            self.speed_check is not None
            and time.monotonic() - self.last_probe >= stability.PROBE_EVERY_S
        )

    def _probe_speed(self, server_pid: int | None) -> None:
        """A probe between cells: on the cell's fresh server, idle before its warm-up and
        calibration (no load, nothing else of ours running). A server that used its CPUs
        meanwhile (a JIT compiling after its start) spoils the probe: it is dropped."""
        assert self.speed_check is not None
        self.last_probe = time.monotonic()
        try:
            before = calibrate.tree_cpu_s(server_pid) if server_pid else None
            chunks = cpuspeed.measure(self._speed_cpus(), stability.PROBE_S)
            if before is not None and server_pid is not None:
                used = calibrate.used_s(before, calibrate.tree_cpu_s(server_pid))
                if used > PROBE_SERVER_MAX * stability.PROBE_S:
                    return
        except (cpuspeed.SpeedError, OSError, ValueError, psutil.Error):
            return  # one probe fewer: the next one comes
        at = time.monotonic() - self.started
        self.speed_probes += stability.probe_value(chunks, at, self.speed_check)
        self._record_stability()

    def _record_stability(self) -> None:
        assert self.speed_check is not None
        self.stability = stability.summarize(
            self.speed_check, self.speed_probes, self._speed_cpus()
        )
        with contextlib.suppress(OSError, ValueError):  # a full disk: the run's end says so
            self.run.record_stability(self.stability)

    def _host_note(self) -> str:
        if not self.stability:
            return ""
        return f"host CV {float(self.stability.get('cv_1s') or 0):.1%}"

    def loadgen_cost(self, vus: int, reconnect: bool = False) -> calibrate.LoadgenCost:
        """k6's cost per request at this many VUs (reconnect: on a new connection each, as
        against a server that closes them), measured the first time it is needed."""
        key = (vus, reconnect)
        if key not in self.loadgen:
            # k6 measured as the cells run it: split, writing every request, in namespaces
            folder = self.run.path / "calibration"
            several = self.options.loadgens > 1 or self.network is not None
            cost = calibrate.loadgen_cost(
                self.k6_cpus,
                self.server_cpus,
                folder,
                vus,
                self._instances(f"loadgen-{vus}", folder, folder) if several else None,
                self._host(),
                reconnect,
            )
            self.loadgen[key] = cost
            paced = (
                f"; {cost.paced_us:.0f} µs paced at {cost.paced_rps:.0f} rps"
                if cost.paced_us and cost.paced_rps
                else ""
            )
            spread = f", spread {cost.spread:.1%}" if cost.spread is not None else ""
            if cost.lone_us is not None:
                spread += f"; a lone VU's cycle {cost.lone_us:+.0f} µs beyond this client's"
            print(
                f"k6 costs {cost.us_per_request:.0f} µs per request at {vus} VUs{paced} "
                f"({cost.source}{spread})",
                file=sys.stderr,
            )
        return self.loadgen[key]

    def _upstream_url(self) -> str:
        if self.upstream is None or not self.upstream.alive():
            if self.upstream:
                self.upstream.stop()
            # a restarted upstream (or a resumed run's) keeps the earlier one's log beside its own
            log = self.run.logs / "upstream.log"
            n = 1
            while log.exists():
                n += 1
                log = self.run.logs / f"upstream-{n}.log"
            self.upstream = server.upstream_server(cpus=self.k6_cpus, log=log)
            self.upstream.start()
            self.upstream_starts += 1
            # on the load side's own CPUs it may pre-empt k6 there (never beside the server)
            scheduling = (
                server.realtime(self.upstream.pid)
                if self.k6_cpus and not set(self.k6_cpus) & set(self.server_cpus or [])
                else "normal (not pinned apart from the server)"
            )
            self.upstream_record = {
                "cpus": self.k6_cpus,
                "scheduling": scheduling,
                "starts": self.upstream_starts,
            }
            self.run.record_upstream(self.upstream_record)
            if self.upstream_starts == 1:
                print(f"upstream: CPUs {self.k6_cpus or 'all'}, {scheduling}", file=sys.stderr)
        return self.upstream.url

    def _start_database(self) -> None:
        """Before the first cell of a run with db cells: the run's own database, in its folder
        on the load side's CPUs (not with --url: the remote server has its own, unknown to
        us), recorded with the user's (--db-url) in run.json. One that cannot start ends the
        run before any cell, in one line (DatabaseUnavailable: exit 2)."""
        if self.database is None and not self.options.url:
            try:
                self.database = self._new_database()
            except DatabaseError as exc:
                log = self.run.path / "postgres" / "postgres.log"
                raise DatabaseUnavailable(
                    f"the database did not start: {exc.args[0].splitlines()[0]} (log: {log})"
                ) from None
        if self.database is not None:
            self._record_database(self.database)

    def _new_database(self) -> Database:
        return Database(self.run.path / "postgres", cpus=self.k6_cpus).start()

    def _database(self) -> Database | None:
        """The database a db cell's server queries (None: none known, with --url): the
        user's, or the run's own, replaced by a fresh one when it died."""
        db = self.database
        if db is None or not db.embedded or db.alive():
            return db
        # It died (during an earlier cell, which says so): whatever is left of it is ended,
        # its data folder removed, and a fresh one started in the same place.
        self.database = None
        db.stop()
        self.database_restarts += 1
        try:
            self.database = self._new_database()
        except DatabaseUnavailable as exc:  # not the user's mistake, this late: the cell's
            raise DatabaseError(str(exc)) from None
        return self.database

    def _record_database(self, db: Database) -> None:
        """run.json's `database`, written as soon as the server is in use (a run killed later
        keeps it); one line on stderr says which server the cells query."""
        self.database_info = db.info()
        self.run.record_database(self.database_record())
        info = self.database_info
        where = f"pid {db.postmaster}, CPUs {db.cpus or 'all'}" if db.embedded else "not ours"
        print(
            f"database: {info['kind']} PostgreSQL {info.get('server_version')} at "
            f"{info['url']} ({where})",
            file=sys.stderr,
        )

    def database_record(self) -> dict[str, Any] | None:
        """What run.json records of the run's database (None: no cell used one)."""
        if self.database_info is None:
            return None
        record = {**self.database_info, "restarts": self.database_restarts}
        if self.database_stop is not None:
            record["stop"] = self.database_stop
        return record

    def _stop_database(self) -> None:
        """The run's end: the embedded database stopped with nothing left (the user's is left
        as it was); a stop that needed SIGKILL is said, and recorded."""
        db, self.database = self.database, None
        if db is None or not db.embedded or db.proc is None:
            return
        report = db.stop()
        self.database_stop = {
            "seconds": round(report.seconds, 3),
            "clean": report.clean,
            "leftover": report.leftover,
        }
        if not report.clean:
            print(
                f"lab: the database's stop needed SIGKILL for pids {report.leftover} "
                f"(port free: {report.port_free})",
                file=sys.stderr,
            )

    # --- one cell -------------------------------------------------------------------------

    def cell(
        self,
        cell: Cell,
        index: int,
        ready: Attempt | None = None,
        following: Cell | None = None,
    ) -> CellResult:
        """One cell in stages: serve, plan, load, judge. A stage that fails makes the row an
        error; the clean-up stops whatever was started, whichever stage it was. ready: this
        cell with its server already starting; following: the next cell, whose server starts
        while this one's stops (then in self.upcoming)."""
        attempt = ready or self._attempt(cell, index)
        self.upcoming = None
        judged = False  # not when a signal ends the run in a stage: then nothing is started
        try:
            self._serve(attempt)
            if self._probe_due():
                self._probe_speed(attempt.proc.pid if attempt.proc else None)
            seconds = self._plan(attempt)
            facts = self._load(attempt, seconds)
            message = failure_message(facts)
            if message:
                raise CellError(message + self._server_tail(attempt, facts))
            judge(attempt.row)
            judged = True
        except (CellError, server.ServerError, calibrate.CalibrationError, OSError) as exc:
            message = _explain(exc, self.run.path)
            died = database_death(attempt.database)
            if died and died not in message:  # e.g. a calibration's 503 says only "503"
                message = f"{died}: {message}"
            attempt.row.update(status="error", error=_one_line(message))
            judge(attempt.row)
            judged = True
        finally:
            with interrupt.shielded():  # bounded: a few seconds at most, whatever died
                start_next = judged and not interrupt.requested()
                after = (following, index + 1) if following is not None and start_next else None
                self.upcoming = self._clean_up(attempt, after)
        return attempt.row

    def _attempt(self, cell: Cell, index: int) -> Attempt:
        return Attempt(
            cell,
            self.contract[cell.endpoint],
            self._row(cell),
            self._stem(cell, index),
            time.monotonic(),
        )

    def _prestart(self, cell: Cell, index: int) -> Attempt | None:
        """The next cell with its server starting, in a thread, while this cell's server
        stops: both only wait for processes (a server's start is its imports; a stop, its
        queue of answers nobody reads), and neither is measured. The next cell's warm-up
        and calibration begin once this server is gone. None (the cell starts its server in
        its own turn): no local server, a fixed --port, or a database that needs a restart."""
        if self.options.url or self.options.port:
            return None
        db = self.database
        if self.contract[cell.endpoint].kind == "db" and not (
            db and (not db.embedded or db.alive())
        ):
            return None
        attempt = self._attempt(cell, index)
        try:
            self._prepare(attempt)
            assert attempt.proc is not None
            started = time.monotonic()
            attempt.proc.launch()  # here: the parent-death signal follows the forking thread
        except (CellError, server.ServerError, DatabaseError, OSError):
            if attempt.proc is not None:
                attempt.proc.stop()
            return None  # prepared again in its own turn, which says what failed
        proc = attempt.proc

        def ready() -> None:
            try:
                proc.wait_healthy(self.options.health_timeout)
                attempt.row.server_start_s = time.monotonic() - started
                attempt.base = proc.url
            except BaseException as exc:  # raised in the cell's own turn (_serve)
                attempt.start_error = exc

        attempt.starting = threading.Thread(target=ready, daemon=True)
        attempt.starting.start()
        return attempt

    def _row(self, cell: Cell) -> CellResult:
        """The cell's row before anything is measured."""
        return CellResult.for_cell(
            cell,
            run_id=self.run.run_id,
            status="ok",
            server_cpus=_cpus(self.server_cpus) if not self.options.url else "",
            k6_cpus=_cpus(self.k6_cpus),
            loadgens=self.options.loadgens,
            rtt_ms=self.rtt_ms,
            started_at=utc_now(),
        )

    def _prepare(self, attempt: Attempt) -> None:
        """What the cell's server needs (its database, interpreter and upstream service) and
        the server itself, not yet started; or --url's."""
        cell, row = attempt.cell, attempt.row
        db = self._database() if attempt.endpoint.kind == "db" else None
        attempt.queried = db
        if db is not None and db.embedded:
            attempt.database = db
        if self.options.url:
            attempt.base = self.options.url.rstrip("/")
            return
        attempt.env = interpreter(cell)
        row.update(**interpreters.row_fields({}, attempt.env))
        upstream_url = self._upstream_url() if attempt.endpoint.kind == "upstream" else ""
        attempt.proc = server.target_server(
            find(cell.target),
            cell.profile,
            port=self.options.port,
            host=self._host(),
            cpus=self.server_cpus,
            upstream_url=upstream_url or "http://127.0.0.1:9",
            # Only a db cell's server opens pools: the others are measured as before the
            # database existed (and a DATABASE_URL in the shell never reaches them).
            env={"DATABASE_URL": db.url if db else ""},
            log=self.run.logs / f"{attempt.stem}-server.log",
            bin_dir=attempt.env.bin_dir if attempt.env and cell.python else None,
        )

    def _start(self, attempt: Attempt) -> None:
        assert attempt.proc is not None
        started = time.monotonic()
        attempt.proc.start(self.options.health_timeout)
        attempt.row.server_start_s = time.monotonic() - started
        attempt.base = attempt.proc.url

    def _serve(self, attempt: Attempt) -> None:
        """Start the cell's server (or take --url's, or the one started beside the previous
        cell's stop), read its /info and fill the row with it."""
        cell, row = attempt.cell, attempt.row
        if attempt.starting is not None:
            while attempt.starting.is_alive():  # its start is bounded by health_timeout
                attempt.starting.join(0.05)
            if attempt.start_error is not None:
                raise attempt.start_error
        else:
            self._prepare(attempt)
            if attempt.proc is not None:
                self._start(attempt)
        db = attempt.queried
        status, info = server.get_json(f"{attempt.base}/info")
        attempt.info = info if status == 200 and isinstance(info, dict) else {}
        self.servers.setdefault(cell.series, attempt.info)
        row.update(**interpreters.row_fields(attempt.info, attempt.env))
        row.update(
            workers=attempt.info.get("workers"),
            threads=attempt.info.get("threads"),
            capacity=attempt.info.get("capacity", {}).get(cell.endpoint),
            db_pool=model.db_pool(cell.endpoint, attempt.info),
        )
        if db is not None:
            refusal = pool_refusal(db, attempt.info)
            if refusal:
                raise CellError(refusal)

    def _plan(self, attempt: Attempt) -> float:
        """Warm the server up, calibrate and predict the cell on it idle, and take the timeline
        picture; returns how long the load runs (lengthened when too few requests would
        complete)."""
        cell, endpoint, row = attempt.cell, attempt.endpoint, attempt.row
        warm_up(attempt.base, endpoint, cell)
        served = attempt.proc.pid if attempt.proc else None
        gc_before = collector.read(attempt.base, served)
        # The model's inputs, on the idle server, and its prediction: before the load. Where
        # the wait dwarfs the CPU, a short calibration window does: it is kept only if the
        # prediction hardly depends on what it read, else the whole window is measured.
        args = (cell, endpoint, attempt.base, attempt.proc, attempt.info, attempt.database)
        short = endpoint.kind not in model.CPU_KINDS  # the rate is the CPU: its whole window
        wall = calibrate.SHORT_WALL_S if short else calibrate.WALL_S
        demand: model.Demand | None = None
        if attempt.proc and warmup.compiles_while_running(attempt.info):
            # A JIT's cold code costs up to ten times its steady CPU per request: the warm-up
            # is skipped only where the prediction hardly moves even then.
            if short:
                demand = self.calibrate(*args, wall_s=wall)
            if (
                demand is None
                or self._cpu_sensitivity(
                    cell, endpoint, demand, attempt.info, factors=(warmup.STEADY_SHARE,)
                )
                > warmup.COLD_SENSITIVITY_MAX
            ):
                demand = None
                self._warm_until_steady(attempt)
            else:
                row.update(warm_up_s=0.0, warm_up_requests=0, warm_up_steady=None)
        if demand is None:
            demand = self.calibrate(*args, wall_s=wall)
        prediction = self.predict(cell, endpoint, demand, attempt.info, row)
        if short and self._cpu_sensitivity(cell, endpoint, demand, attempt.info) > (
            model.CPU_SENSITIVITY_MAX
        ):
            demand, wall = self.calibrate(*args), calibrate.WALL_S
            prediction = self.predict(cell, endpoint, demand, attempt.info, row)
        grace = self.options.graceful_stop_s
        seconds, row.censored = model.planned_duration_s(
            cell.duration_s,
            prediction.rps,
            self.options.max_cell_s,
            loadgen.GRACEFUL_STOP_S if grace is None else grace,
            None if cell.rate else cell.vus,  # an open cell's last requests: not a VU's cycle
        )
        if not (cell.rate or cell.iterations):  # a closed loop's count, in its pool's rounds
            seconds = model.pool_rounds_s(
                seconds,
                prediction.rps,
                prediction.bound,
                cell.vus,
                model.slots(endpoint.kind, cell.endpoint, attempt.info),
                self.options.max_cell_s,
            )
        prediction, seconds = self._bursts(attempt, demand, prediction, seconds)
        attempt.demand = demand
        self._tolerance(attempt, demand, prediction, wall, seconds)
        gc_after = collector.read(attempt.base, served)  # the calibration's share of it
        row.gc_calibration_pct = collector.share_pct(gc_before, gc_after)
        return seconds

    def _load(self, attempt: Attempt, seconds: float) -> CellFacts:
        """The measured k6 run (its instances, --loadgens), the server tree and k6 sampled;
        fills the row with what k6 and the sampler measured, and returns the facts the
        failure rules judge."""
        row = attempt.row
        host = urlsplit(attempt.base).hostname or ""
        ours = server.is_loopback(host) or (self.network is not None and self.network.owns(host))
        if attempt.proc and not ours:
            # a local server is loaded only on loopback or in the namespaces the lab made
            raise CellError(f"refusing to load {host}: not loopback nor the lab's own bridge")
        attempt.upstream = self.upstream if attempt.endpoint.kind == "upstream" else None
        instances = self._instances(attempt.stem)
        served = attempt.proc.pid if attempt.proc else None
        timed = row.bound in collector.LOAD_BOUNDS
        gc_before = collector.read(attempt.base, served) if timed else None
        attempt.k6run = loadgen.start_group(
            calibrate.with_duration(attempt.cell, seconds),
            attempt.base,
            instances,
            self.options.canary_rate,
            self.options.graceful_stop_s,
        )
        k6_pids = attempt.k6run.pids
        pids = {"k6": k6_pids[0]} if len(k6_pids) == 1 else _k6_keys(k6_pids)
        if attempt.proc:
            pids["server"] = attempt.proc.pid
        if attempt.upstream:
            pids["upstream"] = attempt.upstream.pid  # it shares the load side's CPUs
        if attempt.database and attempt.database.proc:
            pids["database"] = attempt.database.proc.pid  # so does the database
        attempt.sampler = Sampler(pids).start()
        compilers = warmup.compiler_threads(attempt.info) if served else ()
        jit = warmup.cpu_reading(served, compilers) if served and compilers else None
        budget = seconds + self.options.k6_margin_s
        code, which = attempt.k6run.wait(timeout=budget)
        usage = attempt.sampler.stop()
        gc_after = collector.read(attempt.base, served) if gc_before else None
        if jit and served:  # the compiler threads' share of the server's CPU meanwhile
            after = warmup.cpu_reading(served, compilers)
            row.jit_compiling_pct = round(100 * warmup.compiling_share(jit, after), 1)
        row.update(**_usage(usage, self.server_cpus, self.k6_cpus, self._load_cpus()))
        ended = tuple(attempt.sampler.ended("server")) if attempt.proc else ()
        row.restarts = len(ended) if attempt.proc else None
        summaries = [loadgen.read_summary(i.summary) for i in instances]
        data = summaries if all(d is not None for d in summaries) else None
        failed = len(instances) > 1 and code not in (None, 0)
        if data is not None and not failed:
            if len(instances) == 1:
                row.update(**loadgen.parse_summary(data[0]))
            else:
                try:
                    row.update(**segments.merge(data, [_samples(i.summary) for i in instances]))
                except segments.SamplesError as exc:
                    raise CellError(f"the k6 instances' samples cannot be merged: {exc}") from None
            times = [t for t in map(_measured_s, data) if t is not None]
            row.measured_s = max(times) if times else None
        if gc_after:  # collections happen while requests are served: over the load's time
            row.gc_pct = collector.share_pct(gc_before, gc_after)
            wall = row.measured_s or seconds
            row.gc_wait_ms = collector.pause_wait_ms(gc_before, gc_after, wall)
            self._at_collector_share(attempt)
        return CellFacts(
            budget_s=budget,
            k6_exit=code,
            summary=data is not None,
            requests=row.requests,
            failed_requests=row.failed_requests,
            failures=row.failures,
            local_server=attempt.proc is not None,
            server_exit=_exit_code(attempt.proc),
            upstream_pid=attempt.upstream.pid if attempt.upstream else None,
            upstream_exit=_exit_code(attempt.upstream),
            database=database_death(attempt.database),
            ended=ended,
            # only read when it can explain a missing summary
            disk_note=_disk_note(self.run.path) if code is not None and data is None else "",
            k6_name="k6" if len(instances) == 1 else f"k6 instance {which + 1} of {len(instances)}",
            k6_failed=failed,
            none_expected=row.predicted_rps == 0 and row.burst_period_s is not None,
        )

    def _instances(
        self, stem: str, summaries: Path | None = None, logs: Path | None = None
    ) -> list[loadgen.Instance]:
        """Where the cell's k6 instances write and run (in the run's k6/ and logs/, or the
        folders given). One (--loadgens 1) writes its summary and log as a cell always has,
        and no per-request output (parse_summary reads its summary); of several, each writes
        its own, and its requests for the exact merge."""
        n = self.options.loadgens
        net = self.network
        summaries, logs = summaries or self.run.summaries, logs or self.run.logs
        prefixes = [tuple(net.exec_prefix(i)) if net else () for i in range(n)]
        if n == 1:
            summary, log = summaries / f"{stem}.json", logs / f"{stem}-k6.log"
            return [loadgen.Instance(summary, log, self.instance_cpus[0], (), prefixes[0])]
        return [
            loadgen.Instance(
                summaries / f"{stem}.{i}.json",
                logs / f"{stem}-k6.{i}.log",
                self.instance_cpus[i],
                tuple(segments.k6_args(i, n, _samples(summaries / f"{stem}.{i}.json"))),
                prefixes[i],
            )
            for i in range(n)
        ]

    def _server_tail(self, attempt: Attempt, facts: CellFacts) -> str:
        """The server's last words, when it is the server that failed."""
        tail = attempt.proc.log_tail(5) if attempt.proc and facts.server_failed else ""
        return f" | {tail}" if tail else ""

    def _clean_up(
        self, attempt: Attempt, following: tuple[Cell, int] | None = None
    ) -> Attempt | None:
        """Stop the sampler, k6 and the server, whatever stage the cell reached (each stop is
        bounded); the stop's report and the cell's wall time go into the row. following: the
        next cell (and its index), whose server starts while this one stops (returned)."""
        if attempt.sampler:
            attempt.sampler.stop()
        if attempt.k6run:
            attempt.k6run.kill()
        upcoming = self._prestart(*following) if following else None
        if attempt.proc:
            report = attempt.proc.stop()
            attempt.row.server_stop_s = report.seconds
            if not report.clean and attempt.row.status == "ok":
                attempt.row.error = f"stop needed SIGKILL for {report.leftover}"
        attempt.row.cell_s = time.monotonic() - attempt.started
        return upcoming

    def _stem(self, cell: Cell, index: int) -> str:
        """File names of a cell's logs and summary; a retried cell does not overwrite."""
        py = f"-py{cell.python}" if cell.python else ""
        stem = f"{index:04d}-{cell.target}-{cell.profile}{py}-{cell.endpoint}"
        stem += f"-v{cell.vus}-r{cell.repeat}"
        attempt, unique = 1, stem
        while any(
            (self.run.logs / f"{unique}-{name}").exists()
            for name in ("k6.log", "k6.0.log", "server.log")
        ):
            attempt += 1
            unique = f"{stem}-a{attempt}"
        return unique

    def timeline(
        self, base: str, path: str, cell: Cell, row: CellResult, stem: str
    ) -> list[float] | None:
        """Per-request start, end and worker pid of a batch of 2 x capacity requests released
        at once on the idle server (the picture tutorials draw from access logs; written for
        a cell's first repeat); returns their end times (None: the picture failed)."""
        capacity = row.capacity
        # twice the slots, and at least 4: two requests may reach a loop in separate
        # iterations and so miss a group (model.answered_together)
        k = min(TIMELINE_MAX, max(2 * capacity, 4)) if capacity else TIMELINE_MAX // 2
        try:
            _, replies = probe.batch(base, path + cell.query(), k, timeout=60)
        except (OSError, RuntimeError):
            return None  # a picture we could not take is no reason to fail the measured cell
        if cell.repeat != 1:
            return [r.end for r in replies]
        self.run.timelines.mkdir(exist_ok=True)
        requests = [
            {
                "start_ms": r.start * 1000,
                "end_ms": r.end * 1000,
                "pid": r.body.get("pid") if isinstance(r.body, dict) else None,
            }
            for r in replies
        ]
        doc = {
            "cell": cell.id,
            "target": cell.target,
            "profile": cell.profile,
            "endpoint": cell.endpoint,
            "capacity": capacity,
            "requests": requests,
        }
        (self.run.timelines / f"{stem}.json").write_text(json.dumps(doc, indent=1))
        return [r.end for r in replies]

    def calibrate(
        self,
        cell: Cell,
        endpoint: Any,
        base: str,
        proc: server.ServerProcess | None,
        info: dict[str, Any],
        database: Database | None = None,
        wall_s: float = calibrate.WALL_S,
    ) -> model.Demand:
        """The model's inputs, measured on the idle server (and k6's cost per request at this
        many VUs, measured once); a db cell's database's CPU per request when it is ours; a
        second lockstep share where a group could grow with the VUs (model.group_share).
        wall_s: the calibration's window (calibrate.server_cost)."""
        upstream_pid = self.upstream.pid if endpoint.kind == "upstream" and self.upstream else None
        db_pid = database.proc.pid if database and database.proc else None  # its whole tree
        compilers = warmup.compiler_threads(info) if proc else ()  # their CPU is no request's
        cost = calibrate.server_cost(
            base,
            endpoint,
            cell,
            proc.pid if proc else None,
            upstream_pid,
            db_pid=db_pid,
            wall_s=wall_s,
            load_cpus=self.k6_cpus,  # this process runs there (None: not pinned)
            compilers=compilers,
        )
        k6 = self.loadgen_cost(cell.vus, reconnect=cost.closes)
        service = endpoint.service_ms(dict(cell.params))
        if service is None:  # "calibrated" in the contract (/db-rows): the wait measured
            service = cost.wait_ms
        pid = proc.pid if proc else None
        share, others = cost.lockstep, None
        group_at = model.group_endpoint(endpoint.kind, cell.endpoint, info)
        at, at_cell = endpoint, cell
        if group_at is not None and group_at != cell.endpoint:
            # n waits: the group a single wait's requests form, and their CPU (group_endpoint)
            share = None
            if not cell.rate and cell.vus > 1:  # a group forms in a closed loop
                ms = cell.param("ms")
                at = self.contract[group_at]
                at_cell = replace(cell, endpoint=group_at, params=(("ms", ms),) if ms else ())
                single = calibrate.server_cost(
                    base, at, at_cell, pid, wall_s=wall_s, compilers=compilers
                )
                share, others = single.lockstep, single.cpu_ms
        wide, wide_read = None, False
        if (  # a short window's share is kept only where no share moves the prediction
            share
            and wall_s >= calibrate.WALL_S
            and cell.vus > model.CONNECTIONS
            and not cell.rate  # a group forms in a closed loop
            and model.wide_share_applies(at_cell.endpoint)
            and group_at is not None
        ):
            wide, wide_read = calibrate.wide_lockstep(base, at, at_cell, pid, compilers), True
        overhead = cost.overhead_ms
        if overhead is not None and self.rtt_ms is not None:
            # measured from the root namespace: k6's requests travel the load hosts' links
            overhead += self.rtt_ms
        return model.Demand(
            service_ms=service or 0.0,
            server_cpu_ms=cost.cpu_ms,
            overhead_ms=overhead,
            upstream_cpu_ms=cost.upstream_cpu_ms,
            loadgen_us=k6.us_per_request,
            loadgen_paced_us=k6.paced_us,
            loadgen_paced_rps=k6.paced_rps,
            loadgen_lone_us=k6.lone_us,
            overshoot_ms=cost.overshoot_ms,
            db_cpu_ms=cost.db_cpu_ms,
            lockstep=share,
            lockstep_wide=wide,
            lockstep_wide_read=wide_read,
            lockstep_cpu_ms=others,
            load_kernel_ms=cost.load_kernel_ms,
            loadgen_reconnects=k6.reconnects,
            jit_calibration_pct=None if cost.compiling is None else round(100 * cost.compiling, 1),
        )

    def _load_cpus(self) -> int:
        return model.load_side_cpus(self.instance_cpus, os.cpu_count() or 1)

    def _cpu_sensitivity(
        self,
        cell: Cell,
        endpoint: Any,
        demand: model.Demand,
        info: dict[str, Any],
        error: float = model.SHORT_CPU_ERROR,
        factors: tuple[float, ...] | None = None,
    ) -> float:
        return model.cpu_sensitivity(
            demand, lambda d: self._model(cell, endpoint, d, info).rps, error, factors
        )

    def _at_collector_share(self, attempt: Attempt) -> None:
        """The row's collector_rps: the model's rate with the server's CPU per request at the
        collector's share of the load (model.at_collector_share) and, for a cell its VUs
        bound, each request held for the pauses it met (model.pause_hold_ms): an explanation
        beside the verdict. Not beside a prediction of whole bursts (burst_period_s): another
        count."""
        row = attempt.row
        if attempt.demand is None or row.burst_period_s:
            return
        demand = model.at_collector_share(attempt.demand, row.gc_pct, row.gc_calibration_pct)
        hold = None
        if row.bound == "vus" and row.server_busy_pct is not None:
            workers = min(int(row.workers or 1), len(self.server_cpus or []) or os.cpu_count() or 1)
            hold = model.pause_hold_ms(row.gc_wait_ms, row.server_busy_pct / 100.0 / workers)
        if hold is not None:
            demand = model.with_pauses(demand or attempt.demand, hold)
        if demand is not None:
            row.collector_rps = self._model(
                attempt.cell, attempt.endpoint, demand, attempt.info
            ).rps

    def _model(
        self, cell: Cell, endpoint: Any, demand: model.Demand, info: dict[str, Any]
    ) -> model.Prediction:
        """The model's prediction for the cell: a burst's staircase when each VU sends one
        request (iterations = 1), else the steady state."""
        if cell.iterations == 1 and not cell.rate:
            return model.predict_burst(
                endpoint.kind, cell.endpoint, demand, cell.vus, info, self._load_cpus()
            )
        return model.predict(
            endpoint.kind, cell.endpoint, demand, cell.vus, cell.rate, info, self._load_cpus()
        )

    def _bursts(
        self, attempt: Attempt, demand: model.Demand, prediction: model.Prediction, load_s: float
    ) -> tuple[model.Prediction, float]:
        """The timeline's batch (requests released at once on the idle server), before the
        load: afterwards, requests k6 gave up on can still fill the server's queue (a sync
        worker works through its listen backlog), and the picture with them. A server it shows
        answering its queue together, queued by more VUs than its slots, is predicted as the
        whole bursts the cell's window counts (model.burst_window); a queue of slots that
        wait runs for a window that ends with a burst where one fits (model.burst_aligned_s),
        whatever the batch showed. Returns the prediction and how long the load runs."""
        cell, endpoint, row = attempt.cell, attempt.endpoint, attempt.row
        unchanged = prediction, load_s
        if endpoint.kind not in TIMELINE_KINDS:
            return unchanged
        capacity = model.slots(endpoint.kind, cell.endpoint, attempt.info)
        queued = math.isfinite(capacity) and cell.vus > capacity and not cell.rate
        ends: list[float] = []
        if cell.repeat == 1 or (queued and 2 * capacity <= TIMELINE_MAX):
            ends = self.timeline(attempt.base, endpoint.path, cell, row, attempt.stem)
        bursts_apply = model.bursts_apply(endpoint.kind, prediction.bound)
        if not (queued and not cell.iterations and bursts_apply):
            return unchanged
        hold_s = (
            demand.service_ms
            + sum(v or 0.0 for v in (demand.server_cpu_ms, demand.overshoot_ms, demand.db_cpu_ms))
        ) / 1000.0
        grace = self.options.graceful_stop_s
        grace_s = loadgen.GRACEFUL_STOP_S if grace is None else grace
        if prediction.bound == "slots":
            # A wait's period is its sleep's, so the window can end with a burst: it then
            # reads the same rate whether the server answers its queue together under the
            # load or not, which the idle batch does not always tell (hypercorn's groups).
            aligned = model.burst_aligned_s(
                cell.vus, capacity, hold_s, load_s, grace_s, max(load_s, self.options.max_cell_s)
            )
            if aligned is not None:
                # at least MIN_REQUESTS in whole bursts: a shortfall the plan saw does not apply
                load_s, row.censored = aligned, ""
        if not (ends and model.answered_together(ends, capacity)):
            return prediction, load_s
        rps, period, bursts = model.burst_window(cell.vus, capacity, hold_s, load_s, grace_s)
        row.update(predicted_rps=rps, burst_period_s=round(period, 4))
        if not row.censored and bursts * cell.vus < model.MIN_REQUESTS:
            row.censored = (
                f"answered in bursts of {cell.vus} every {period:.3g} s: the window holds "
                f"{bursts * cell.vus} < {model.MIN_REQUESTS} requests"
            )
        return replace(prediction, rps=rps), load_s

    def _tolerance(
        self,
        attempt: Attempt,
        demand: model.Demand,
        prediction: model.Prediction,
        wall_s: float,
        load_s: float,
    ) -> None:
        """The cell's tolerance, before its load: how far its prediction rides on the CPUs'
        speed, and how much that speed varied in this run so far (lab.stability); the row's is
        the whole run's (_judge_at_the_end)."""
        cell, endpoint = attempt.cell, attempt.endpoint
        share = model.speed_share(
            demand, lambda d: self._model(cell, endpoint, d, attempt.info).rps
        )
        # k6's cost was measured by its own short runs, whose spread is k6's own noise; the
        # rest by this cell's calibration
        load_side = prediction.bound in model.LOAD_SIDE
        calibration_s = parse_duration(calibrate.LOADGEN_DURATION) if load_side else wall_s
        k6 = self.loadgen.get((cell.vus, bool(demand.loadgen_reconnects)))
        k6_sd = stability.loadgen_sd(k6.spread, k6.readings) if k6 and load_side else 0.0
        self.tolerance_inputs[attempt.row.cell] = (share, calibration_s, load_s, k6_sd)
        tol, why = stability.tolerance(self.stability, share, calibration_s, load_s, k6_sd)
        attempt.row.update(tolerance=tol, tolerance_why=why)

    def _judge_at_the_end(self, rows: list[CellResult]) -> None:
        """Each row of this session judged again at the tolerance the whole run's stability
        justifies (its check and every probe, where each cell's was the check and the probes
        before it: drift shows only once probes have been taken), and results.csv rewritten
        with the rows that changed. Still never from a cell's own efficiency."""
        changed: list[CellResult] = []
        for row in rows:
            inputs = self.tolerance_inputs.get(row.cell)
            if inputs is None or row.status != "ok":
                continue
            tol, why = stability.tolerance(self.stability, *inputs)
            if (tol, why) == (row.tolerance, row.tolerance_why):
                continue
            row.tolerance, row.tolerance_why = tol, why
            row.verdict = model.verdict(row.status, row.efficiency, row.censored, tol)
            changed.append(row)
        if changed:
            self.run.replace_rows(changed)

    def _warm_until_steady(self, attempt: Attempt) -> None:
        """A server that compiles while it runs, warmed up until its CPU per request is steady
        (lab.run.warmup); the row says how long that took."""
        assert attempt.proc is not None
        warmed = warmup.until_steady(
            attempt.base,
            attempt.endpoint,
            attempt.cell,
            attempt.proc.pid,
            warmup.compiler_threads(attempt.info),
            self.options.warm_up_max_s,
        )
        attempt.row.update(
            warm_up_s=round(warmed.seconds, 2),
            warm_up_requests=warmed.requests,
            warm_up_steady=warmed.steady,
        )

    def predict(
        self, cell: Cell, endpoint: Any, demand: model.Demand, info: dict[str, Any], row: CellResult
    ) -> model.Prediction:
        """The model's prediction of the cell; fills the model's columns."""
        p = self._model(cell, endpoint, demand, info)
        grouped = model.lockstep_applies(endpoint.kind, cell.endpoint, info)
        row.update(
            service_ms=demand.service_ms,
            server_cpu_ms=demand.server_cpu_ms,
            overhead_ms=demand.overhead_ms,
            overshoot_ms=demand.overshoot_ms,
            upstream_cpu_ms=demand.upstream_cpu_ms,
            db_cpu_ms=demand.db_cpu_ms,
            load_kernel_ms=demand.load_kernel_ms,
            loadgen_us=demand.loadgen_us,
            loadgen_paced_us=demand.loadgen_paced_us,
            loadgen_paced_rps=demand.loadgen_paced_rps,
            loadgen_lone_us=demand.loadgen_lone_us,
            loadgen_reconnects=demand.loadgen_reconnects,
            jit_calibration_pct=demand.jit_calibration_pct,
            lockstep=demand.lockstep if grouped else None,  # the shares the model used
            lockstep_wide=demand.lockstep_wide if grouped else None,
            lockstep_wide_read=demand.lockstep_wide_read if grouped else None,
            lockstep_cpu_ms=demand.lockstep_cpu_ms if grouped else None,
            loadgen_rps_max=p.loadgen_rps_max,
            predicted_rps=p.rps,
            predicted_latency_ms=p.latency_ms,
            bound=p.bound,
        )
        return p


def _discard(attempt: Attempt) -> None:
    """A cell whose server was started for it, when the run ends before it: stopped."""
    if attempt.starting is not None:
        attempt.starting.join()  # bounded by the start's health timeout
    if attempt.proc is not None:
        attempt.proc.stop()


def judge(row: CellResult) -> None:
    """Efficiency and the verdict, once the cell is measured (lab.model.verdict decides)."""
    if row.status == "ok" and not row.censored:
        row.censored = model.too_few(row.requests) or model.still_compiling(
            row.jit_compiling_pct, row.bound
        )
    row.efficiency = (
        model.efficiency(row.rps, row.predicted_rps)
        if row.status == "ok" and not row.censored
        else None
    )
    row.verdict = model.verdict(row.status, row.efficiency, row.censored, row.tolerance)


def _measured_s(data: dict[str, Any]) -> float | None:
    """How long k6 really ran the cell (the duration, plus what the graceful stop used)."""
    ms = (data.get("state") or {}).get("testRunDurationMs")
    return ms / 1000.0 if isinstance(ms, int | float) else None


class CellError(RuntimeError):
    """The cell could not be measured; the message says why."""


@dataclass(frozen=True)
class CellFacts:
    """What the failure rules read once a cell's load is over: plain facts, no processes."""

    budget_s: float  # how long k6 was given: the planned duration and the margin
    k6_exit: int | None  # None: k6 did not end within the budget (hung) and was stopped
    summary: bool  # k6's summary was read
    requests: int | None = None  # successful requests (the row's)
    failed_requests: int | None = None
    failures: str = ""  # why they failed (the row's failures column)
    local_server: bool = True  # False with --url: no server of ours to watch
    server_exit: int | None = None  # the local server's exit code; None while it runs
    upstream_pid: int | None = None  # the upstream service an /upstream cell called
    upstream_exit: int | None = None  # its exit code; None while it runs
    database: str = ""  # how the run's database died during the cell ('' : it did not)
    ended: tuple[int, ...] = ()  # the server's serving processes that ended (restarts)
    disk_note: str = ""  # what the results disk says when k6 wrote no summary
    k6_name: str = "k6"  # the k6 instance k6_exit is of ("k6 instance 2 of 2")
    k6_failed: bool = False  # one of several instances failed: the others were stopped
    # the model predicted no answer within the window (a burst due after it): the row is
    # censored with that reason, not an error
    none_expected: bool = False

    @property
    def server_failed(self) -> bool:
        """It is the local server that failed: it died or answered nothing (not counted
        when a k6 instance failed first: its merge was not read)."""
        nothing = not self.requests and not self.k6_failed
        return self.local_server and (self.server_exit is not None or nothing)


def cell_problems(facts: CellFacts) -> list[str]:
    """Why a measured cell is an error row, not a measurement (empty: it is one). Every dead
    process is named; of k6's outcome only the first that applies: hung, no summary, too many
    failed requests, no successful request."""
    problems = []
    if facts.server_exit is not None:
        problems.append(f"the server {children.describe_exit(facts.server_exit)} during the cell")
    if facts.upstream_pid is not None and facts.upstream_exit is not None:
        problems.append(
            f"the upstream service (pid {facts.upstream_pid}) "
            f"{children.describe_exit(facts.upstream_exit)} during the cell"
        )
    if facts.database:
        problems.append(facts.database)
    share = _failed_share(facts.requests, facts.failed_requests)
    if facts.k6_exit is None:
        problems.append(
            f"{facts.k6_name} did not finish within {facts.budget_s:.0f} s (hung?) and was stopped"
        )
    elif facts.k6_failed:
        problems.append(
            f"{facts.k6_name} {children.describe_exit(facts.k6_exit)} "
            "(the other instances were stopped)"
        )
    elif not facts.summary:
        problems.append(
            f"{facts.k6_name} {children.describe_exit(facts.k6_exit)} and wrote no summary"
            + facts.disk_note
        )
    elif facts.failed_requests and share > FAILED_SHARE_MAX:
        problems.append(
            f"{facts.failed_requests} of {(facts.requests or 0) + facts.failed_requests} "
            f"requests failed ({share:.2%}, above {FAILED_SHARE_MAX:.1%})"
        )
    elif not facts.requests and not facts.none_expected:
        problems.append("no successful requests (server stopped answering?)")
    if facts.ended:
        problems.append(
            f"{len(facts.ended)} serving process(es) of the server ended during the cell "
            f"(pid {', '.join(map(str, facts.ended))}), so it was not measured as configured"
        )
    return problems


def failure_message(facts: CellFacts) -> str | None:
    """The error of a cell that cannot count (None: it counts): its problems, then why its
    requests failed. (The runner adds the server's log tail when facts.server_failed.)"""
    problems = cell_problems(facts)
    if not problems:
        return None
    return "; ".join(problems) + (f": {facts.failures}" if facts.failures else "")


def _failed_share(requests: int | None, failed: int | None) -> float:
    """Failed requests' share of all the requests sent."""
    total = (requests or 0) + (failed or 0)
    return (failed or 0) / total if total else 0.0


def _exit_code(proc: server.ServerProcess | None) -> int | None:
    """A process's exit code once it has ended; None while it runs (or without one)."""
    if proc is None or proc.proc is None or proc.alive():
        return None
    return proc.proc.returncode


def database_death(db: Database | None) -> str:
    """How the run's own database died ('' while it runs, or for none): named by the
    postmaster's pid, as the upstream service is by its own."""
    ended = db.how_it_ended() if db else ""
    if db is None or not ended:
        return ""
    pid = db.postmaster or (db.proc.pid if db.proc else "?")
    return f"the database (pid {pid}) {ended} during the cell"


def pool_refusal(db: Database, info: dict[str, Any]) -> str | None:
    """A db cell's server must fit the database: each worker opens its pools when it starts
    serving, /db's and, when it is another driver's, /db-blocking's (asyncpg's and psycopg's
    in the async Python targets). None: it fits, or /info states no pools."""
    pools = info.get("database")
    workers = info.get("workers")
    if not isinstance(pools, dict) or not isinstance(workers, int):
        return None
    per_worker = pools.get("pool")
    if not isinstance(per_worker, int):
        return None
    blocking = pools.get("blocking_pool")
    if pools.get("blocking_driver") != pools.get("driver") and isinstance(blocking, int):
        per_worker += blocking
    return db.check_pool(workers, per_worker)


def _disk_note(path: Path) -> str:
    free = rundir.free_bytes(path)
    if free is not None and free < rundir.DISK_LOW_BYTES:
        return f" (the results disk is full: {free} bytes free at {path})"
    return ""


def _explain(exc: BaseException, path: Path) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the results disk is full ({exc.strerror}: {exc.filename or path})"
    return str(exc)


def interpreter(cell: Cell) -> interpreters.Interpreter | None:
    """The environment a local cell's server runs on (None for a Go cell)."""
    try:
        return interpreters.for_cell(cell)
    except interpreters.Unavailable as exc:  # removed since the run was planned
        raise CellError(str(exc)) from None


def _cpus(cpus: list[int] | None) -> str:
    return " ".join(map(str, cpus)) if cpus else ""


def _samples(summary: Path) -> Path:
    """An instance's per-request output, beside its summary (x.0.json: x.0.csv.gz)."""
    return summary.with_suffix(segments.SAMPLES_SUFFIX)


def _k6_keys(pids: list[int]) -> dict[str, int]:
    """The sampler's names of several k6 instances: k6.0, k6.1, ..."""
    return {f"k6.{i}": pid for i, pid in enumerate(pids)}


def _usage(
    usage: dict[str, Any],
    server_cpus: list[int] | None,
    k6_cpus: list[int] | None,
    load_cpus: int | None = None,
) -> dict[str, Any]:
    """Sampled CPU and memory; a side is 'bound' when it used most of the CPUs it had.
    Several k6 instances (k6.0, k6.1, ...): their sum, and each one's (k6_cpu_pcts).
    load_cpus: the load side's CPUs (the instances' distinct ones; default: k6_cpus)."""
    instances = [usage[k] for k in sorted(usage) if k.startswith("k6.")]
    k6 = usage.get("k6")
    srv = usage.get("server")
    up = usage.get("upstream")
    db = usage.get("database")
    k6_pct = k6.cpu_pct if k6 else None
    shares = [u.cpu_pct for u in instances]
    if instances and all(p is not None for p in shares):
        k6_pct = sum(p for p in shares if p is not None)
    srv_pct = srv.cpu_pct if srv else None
    up_pct = up.cpu_pct if up else None
    db_pct = db.cpu_pct if db else None
    # The load side is k6 and what shares its CPUs: the upstream service for /upstream cells,
    # the database for db cells.
    load_pct = None if k6_pct is None else k6_pct + (up_pct or 0.0) + (db_pct or 0.0)
    every = os.cpu_count() or 1
    k6_budget = load_cpus or (len(k6_cpus) if k6_cpus else every)
    srv_budget = len(server_cpus) if server_cpus else every
    return {
        "server_cpu_pct": srv_pct,
        "server_busy_pct": srv.busy_pct if srv else None,
        "server_rss_mb": srv.rss_mb if srv else None,
        "server_threads": srv.threads if srv else None,
        "k6_cpu_pct": k6_pct,
        "k6_cpu_pcts": "+".join(f"{p:.0f}" for p in shares if p is not None),
        "upstream_cpu_pct": up_pct,
        "db_cpu_pct": db_pct,
        "loadgen_bound": load_pct is not None and load_pct >= model.LOADGEN_BOUND_PCT * k6_budget,
        "server_cpu_bound": srv_pct is not None and srv_pct >= model.SERVER_BOUND_PCT * srv_budget,
    }


def _brief(row: CellResult) -> str:
    if row.status != "ok":
        return f"ERROR {row.error[:100]}"
    eff_text = f" eff {row.efficiency:.2f}" if row.efficiency else ""
    if row.efficiency and row.tolerance is not None:
        eff_text += f" ±{row.tolerance:.0%}"
    return (
        f"{row.rps or 0:.1f} rps, p95 {row.lat_p95_ms or 0:.0f} ms{eff_text} "
        f"({row.verdict}; {row.bound or 'no bound'})"
    )


WARM_UP_MAX = 256  # requests at once at most, for the upstream client's pool


def warm_up(base: str, endpoint: Any, cell: Cell) -> None:
    """Wake up thread pools, pool processes and connections with small requests at once.
    An /upstream cell's server needs, under the load, as many connections to the upstream as
    calls in flight: N VUs x n calls at once. Opened by the load's first wave instead, they
    slow that wave down, a start-up cost the steady state does not have; so the same number of
    calls are made at once here (waits of min(ms, 10) ms, released together), the same rule on
    every target (measured: CONTRACT.md, 'Upstream calls')."""
    small = {"ms": 1, "n": 1}  # of the parameters the cell has (Cell.query ignores others)
    k = min(cell.vus, 16)
    if endpoint.kind == "upstream":
        wait = min(cell.param("ms") or 1, calibrate.WAIT_MS)
        small["ms"] = wait
        if endpoint.concurrent:  # n calls at once: keep n; one after another need one connection
            small.pop("n")
        k = min(cell.vus, WARM_UP_MAX)
    url = f"{base}{endpoint.path}{cell.query(**small)}"
    start = threading.Barrier(k)

    def one(_: int) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            start.wait(timeout=10)
        return server.get_json(url, timeout=30)

    with ThreadPoolExecutor(k) as pool:
        list(pool.map(one, range(k)))


def summary_table(rows: list[CellResult]) -> str:
    head = f"{'cell':<52} {'rps':>9} {'p95 ms':>9} {'eff':>5} {'tol':>4}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.status != "ok":
            lines.append(f"{r.cell:<52} {'error':>9}  {r.error[:60]}")
            continue
        eff = f"{r.efficiency:.2f}" if r.efficiency else "-"
        rps = f"{r.rps:>9.1f}" if r.rps is not None else f"{'-':>9}"
        p95 = f"{r.lat_p95_ms:>9.1f}" if r.lat_p95_ms is not None else f"{'-':>9}"
        tol = f"±{r.tolerance:.0%}" if r.tolerance is not None else "-"
        lines.append(f"{r.cell:<52} {rps} {p95} {eff:>5} {tol:>4}  {r.verdict} ({r.bound or '-'})")
    return "\n".join(lines)
