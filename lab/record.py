"""A run's two records, typed. `CellResult` is one measured cell: it owns every column of
results.csv, its type and its CSV form; the runner fills one, `RunDir.append` writes it and
`lab.rundir.read_rows` (the one reader of results.csv) reads it back with the same types. A
column is added here, once. `RunMeta` is run.json: the run's provenance and state, its keys in
the order the runner has always written them, and the one rule for a run whose runner is gone.

Both sit here, in the top layer, rather than in lab.rundir (which owns the folder they live
in) because the supervisor (lab.proc.supervisor) marks a run `died` after a kill -9 of its
runner, and lab.proc may not import lab.run."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import time
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_type_hints

import psutil

if TYPE_CHECKING:
    from lab.matrix import Cell


@dataclass
class CellResult:
    # what was measured
    run_id: str = ""
    cell: str = ""
    target: str = ""
    profile: str = ""
    endpoint: str = ""
    ms: int | None = None
    n: int | None = None
    vus: int | None = None
    rate: int | None = None
    duration_s: float | None = None  # what the matrix asked for
    measured_s: float | None = None  # how long k6 really ran (longer when the cell was lengthened)
    repeat: int = 1
    python: str = ""  # interpreter version the server ran on, e.g. "3.13.0" (Python targets)
    python_impl: str = ""  # "cpython", ...
    gil: bool | None = None  # whether the server ran with the GIL (empty for Go)
    status: str = "error"
    error: str = ""
    # what k6 saw (main scenario)
    requests: int | None = None  # successful requests
    failed_requests: int | None = None
    failures: str = ""  # e.g. "502 x14848, timeout x3" (helper "runner" fills it)
    restarts: int | None = None  # serving worker pids that changed during the cell
    rps: float | None = None  # a closed loop's: its VUs over their mean cycle; else k6's rate
    failed_rate: float | None = None
    dropped: int | None = None
    lat_avg_ms: float | None = None
    lat_p50_ms: float | None = None
    lat_p90_ms: float | None = None
    lat_p95_ms: float | None = None
    lat_p99_ms: float | None = None
    lat_max_ms: float | None = None
    canary_p50_ms: float | None = None
    canary_p99_ms: float | None = None
    # what the sampler saw during the load (observations: never part of the prediction)
    server_cpu_pct: float | None = None
    server_busy_pct: float | None = None
    server_rss_mb: float | None = None
    # the most OS threads the server's processes held at once (a thread per request shows here)
    server_threads: int | None = None
    k6_cpu_pct: float | None = None  # k6's CPU, of all its instances together (--loadgens)
    k6_cpu_pcts: str = ""  # each instance's, when there are several: e.g. "93+91"
    upstream_cpu_pct: float | None = None
    db_cpu_pct: float | None = None  # the database server's CPU during the load (db cells)
    loadgen_bound: bool | None = None
    server_cpu_bound: bool | None = None
    # what the server says of itself (/info) and where it ran
    workers: int | None = None
    threads: int | None = None
    capacity: int | None = None
    server_cpus: str = ""
    k6_cpus: str = ""
    loadgens: int | None = None  # k6 instances the cell's load was split into (--loadgens)
    # the model's inputs, measured before the load, and its prediction
    service_ms: float | None = None  # waiting time S per request (from the contract)
    server_cpu_ms: float | None = None  # server tree CPU per request, idle server
    overhead_ms: float | None = None  # per-request round trip beyond the server's CPU
    # what the load hosts' links add to a round trip (--netns: measured, in overhead_ms too)
    rtt_ms: float | None = None
    overshoot_ms: float | None = None  # how late a request's waits end (holds its slot)
    upstream_cpu_ms: float | None = None  # upstream service CPU per request (/upstream)
    db_pool: int | None = None  # connections per worker in the pool the endpoint uses (db cells)
    db_cpu_ms: float | None = None  # the database server's CPU per request (db cells)
    # the kernel's interrupt work on k6's CPUs per request beside the upstream or the database
    load_kernel_ms: float | None = None
    loadgen_us: float | None = None  # k6's cost per request (µs), measured once per VU count
    # k6's CPU per request (µs) where its requests wait, and the rate it was measured at
    loadgen_paced_us: float | None = None
    loadgen_paced_rps: float | None = None
    # at 1 VU: how much longer k6's cycle is than the calibration's round trip (µs, on gin)
    loadgen_lone_us: float | None = None
    # the server closed its connections after each reply: k6's costs above are those of a new
    # connection per request, as k6 then opens them
    loadgen_reconnects: bool | None = None
    lockstep: float | None = None  # 0-1: how far the calibration's requests moved as one group
    # the same at min(VUs, 32) connections, for more VUs than 8: whether a group grows
    lockstep_wide: float | None = None
    # whether it was read (then empty: not told from the calibration client's own convoy)
    lockstep_wide_read: bool | None = None
    # the CPU per request of the group's requests where the shares are /async's (the cell's
    # endpoint waits n times: lab.model.group_endpoint); empty: the cell's own d
    lockstep_cpu_ms: float | None = None
    loadgen_rps_max: float | None = None  # the load side's ceiling on its CPUs
    predicted_rps: float | None = None
    predicted_latency_ms: float | None = None
    # a server that answers its queue together (a batch released at once before the load):
    # the time between its bursts; predicted_rps counts the whole bursts the window holds
    burst_period_s: float | None = None
    # the limiting resource: slots, db-pool, server-cpu, loadgen, upstream-cpu, db-cpu, vus, ...
    bound: str = ""
    efficiency: float | None = None
    # the ± share of the prediction the verdict allowed (lab.model.tolerance) and why: 5 % for a
    # wait, wider (at most 15 %) as far as the prediction rides on CPU speed the run's stability
    # check saw vary
    tolerance: float | None = None
    tolerance_why: str = ""
    verdict: str = ""
    censored: str = ""  # why the cell could not complete enough requests to be judged
    # timings of the cell
    # a server that compiles while it runs (/info's jit): its warm-up until its CPU per
    # request stopped falling (lab.run.warmup), and whether it did within the time allowed
    warm_up_s: float | None = None
    warm_up_requests: int | None = None
    warm_up_steady: bool | None = None
    # the share of the server's CPU during the load in its JIT's compiler threads (/info's
    # compiler_threads), in %: over model.COMPILING on a cell bound by that CPU, it is censored
    jit_compiling_pct: float | None = None
    # the same share during the calibration, in %: left out of server_cpu_ms (a compilation
    # is no request's cost; lab.run.calibrate.server_cost)
    jit_calibration_pct: float | None = None
    # the share of the server's CPU its garbage collector took (/info's collector: Python's),
    # in %, during the load and during the calibration before it: an observation, not a model
    # input (lab.run.collector)
    gc_pct: float | None = None
    gc_calibration_pct: float | None = None
    # how long a request's step waited, on average, for a collection in progress under the
    # load (its pauses' residual: lab.run.collector.pause_wait_ms), in ms
    gc_wait_ms: float | None = None
    # the model's rate had the calibration seen the load's collector share (its CPU per
    # request rescaled: lab.model.at_collector_share) and, for a cell its VUs bound, its
    # pauses (lab.model.pause_hold_ms): an explanation beside the verdict
    collector_rps: float | None = None
    server_start_s: float | None = None
    server_stop_s: float | None = None
    cell_s: float | None = None
    started_at: str = ""

    @classmethod
    def for_cell(cls, cell: Cell, **values: Any) -> CellResult:
        """A cell's row before anything is measured: what the cell says of itself, then
        `values` (run_id, status, ...)."""
        return cls(
            cell=cell.id,
            target=cell.target,
            profile=cell.profile,
            endpoint=cell.endpoint,
            ms=cell.param("ms"),
            n=cell.param("n"),
            vus=cell.vus,
            rate=cell.rate,
            duration_s=cell.duration_s,
            repeat=cell.repeat,
            **values,
        )

    @property
    def key(self) -> str:
        """The cell's id without its #repeat suffix: what repeats have in common."""
        return self.cell.rsplit("#", 1)[0]

    @property
    def params(self) -> str:
        cell = self.cell
        return cell.split("?", 1)[1].split("@", 1)[0] if "?" in cell else ""

    def update(self, **values: Any) -> None:
        for name, value in values.items():
            if name not in _types():
                raise AttributeError(f"CellResult has no column {name!r}")
            setattr(self, name, value)

    def to_csv(self) -> dict[str, str]:
        return {name: to_text(getattr(self, name)) for name in COLUMNS}

    @classmethod
    def from_csv(cls, d: dict[str, str | None]) -> CellResult:
        """A row read back; a value that does not parse as its column's type becomes None."""
        values: dict[str, Any] = {}
        for name, kind in _types().items():
            raw = d.get(name)
            if raw is None:
                continue  # an older file without this column: the default
            values[name] = from_text(raw, kind)
        values["repeat"] = values.get("repeat") or 1
        values["status"] = values.get("status") or "error"
        return cls(**values)


@cache
def _types() -> dict[str, str]:
    """Column name -> 'str', 'int', 'float' or 'bool'."""
    hints = get_type_hints(CellResult)
    out = {}
    for f in fields(CellResult):
        text = str(hints[f.name])
        out[f.name] = next((t for t in ("bool", "int", "float") if t in text), "str")
    return out


COLUMNS: list[str] = [f.name for f in fields(CellResult)]


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return f"{value:.6g}" if abs(value) < 1e15 else str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def from_text(raw: str, kind: str) -> Any:
    raw = raw.strip()
    if kind == "str":
        return raw
    if raw == "":
        return None
    if kind == "bool":
        return {"true": True, "false": False}.get(raw.lower())
    try:
        number = float(raw)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if kind == "int" else number


# --- run.json ---------------------------------------------------------------------------------

RUN_JSON = "run.json"


class NotAnObject(ValueError):
    """run.json holds JSON, but not an object."""


@dataclass
class RunMeta:
    """run.json, typed. A field is None when the file lacks its key (an older run, a broken
    file). A key this version does not know, or a value of another JSON type than its field's,
    is kept as read in `extra`, so that rewriting the file (marking it died, resuming it) loses
    nothing. The keys keep the file's order; a key the file lacks follows in the order of the
    fields below, which is the order the runner has always written them in."""

    run_id: str | None = None
    status: str | None = None  # running, complete, interrupted, failed or died
    started_at: str | None = None
    command: list[str] | None = None  # the lab command line, e.g. ["bench", "go", "sync"]
    options: dict[str, Any] | None = None  # lab.run.runner.Options
    matrix: dict[str, Any] | None = None  # the matrix the cells came from, with its seed
    runner: dict[str, Any] | None = None  # who runs it: pid, started, host (runner_identity)
    knobs: dict[str, str] | None = None  # WORKERS, THREADS, ... as the environment set them
    cpus: dict[str, Any] | None = None  # {"server": [...], "k6": [...]}
    git_commit: str | None = None
    git_dirty: bool | None = None
    machine: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    servers: dict[str, Any] | None = None  # target/profile -> the first /info it answered
    interpreters: dict[str, Any] | None = None  # lab.interpreters.used
    cells: list[dict[str, Any]] | None = None  # every planned cell (lab.matrix.Cell.to_json)
    loadgen: list[dict[str, Any]] | None = None  # k6's cost per request, when measured
    database: dict[str, Any] | None = None  # the run's PostgreSQL (lab.proc.database.info)
    upstream: dict[str, Any] | None = None  # the upstream service: CPUs, scheduling, starts
    stability: dict[str, Any] | None = None  # the host's CPU speed spread (lab.run.stability)
    finished_at: str | None = None
    died: str | None = None  # why the run ended without its runner
    extra: dict[str, Any] = field(default_factory=dict)
    order: list[str] = field(default_factory=list, repr=False)  # the keys as last read/written

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunMeta:
        meta = cls(order=list(data))
        kinds = _meta_kinds()
        for key, value in data.items():
            if key in kinds and isinstance(value, kinds[key]):
                setattr(meta, key, value)
            else:
                meta.extra[key] = value
        return meta

    def to_json(self) -> dict[str, Any]:
        values = {k: getattr(self, k) for k in _meta_kinds() if getattr(self, k) is not None}
        values |= {k: v for k, v in self.extra.items() if k not in values}
        keys = [k for k in self.order if k in values]
        keys += [k for k in values if k not in keys]
        return {k: values[k] for k in keys}

    @classmethod
    def read(cls, run_dir: Path) -> RunMeta:
        """Raises OSError when run.json cannot be read, ValueError when it is not JSON
        (NotAnObject when it is JSON but not an object)."""
        data = json.loads((run_dir / RUN_JSON).read_text())
        if not isinstance(data, dict):
            raise NotAnObject("run.json is not an object")
        return cls.from_json(data)

    def write(self, run_dir: Path) -> None:
        """Atomically: readers see the old run.json or the new one. On a full disk the old one
        stays and no partial file is left beside it. The temporary file is the writer's own
        (the supervisor may mark a run died while a resumed runner writes)."""
        data = self.to_json()
        tmp = run_dir / f"{RUN_JSON}.{os.getpid()}.tmp"
        try:
            with tmp.open("w") as f:
                f.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(run_dir / RUN_JSON)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self.order = list(data)  # a key dropped since (died, on resume) comes back at the end


@cache
def _meta_kinds() -> dict[str, type]:
    """run.json key -> the JSON type its field holds (str, bool, list or dict)."""
    hints = get_type_hints(RunMeta)
    kinds = {}
    for f in fields(RunMeta):
        if f.name in ("extra", "order"):
            continue
        kind = get_args(hints[f.name])[0]  # X of `X | None`
        kinds[f.name] = getattr(kind, "__origin__", kind)  # list[str] -> list
    return kinds


def utc_now() -> str:
    """Now, as every timestamp the lab writes is written (run.json, results.csv's started_at,
    the run lock, processes.log): UTC to the second, e.g. 2030-01-02T03:04:05Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def runner_identity() -> dict[str, Any]:
    """Who runs a run: enough to tell later whether that process is still alive."""
    return {
        "pid": os.getpid(),
        "started": psutil.Process().create_time(),
        "host": platform.node(),
    }


def runner_alive(meta: RunMeta) -> bool:
    """Whether the process that runs this run still exists (same pid, same start time)."""
    runner = meta.runner or {}
    pid, started = runner.get("pid"), runner.get("started")
    if not isinstance(pid, int) or runner.get("host", platform.node()) != platform.node():
        return False
    return same_process(pid, started)


def same_process(pid: int, started: Any) -> bool:
    """Whether `pid` is still the process that started at `started` (its create time): a pid
    alone may have been reused by an unrelated process since."""
    try:
        return abs(psutil.Process(pid).create_time() - float(started)) < 1.0
    except (psutil.Error, TypeError, ValueError):
        return False


def mark_died(run_dir: Path, ended_pid: int | None = None) -> RunMeta:
    """The one rule for a run whose runner is gone: run.json, with a `running` run marked
    `died` and why (on disk too). The supervisor passes the runner's pid, which it saw end (so
    it knows when the run finished); any other reader asks whether the recorded runner still
    lives. Raises what RunMeta.read raises; a write that fails leaves the file as it was."""
    meta = RunMeta.read(run_dir)
    if meta.status != "running":
        return meta
    if ended_pid is None:
        if runner_alive(meta):
            return meta
        meta.died = "found without its runner: it was killed or its machine stopped"
    else:
        if (meta.runner or {}).get("pid") != ended_pid:
            return meta  # another runner has resumed the run since
        meta.finished_at = utc_now()
        meta.died = f"the runner (pid {ended_pid}) ended without finishing the run"
    meta.status = "died"
    with contextlib.suppress(OSError):
        meta.write(run_dir)
    return meta
