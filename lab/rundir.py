"""Run folders, and their one owner: results/<run-id>/ with results.csv (one row per cell,
flushed as each cell ends), the raw k6 summary of every cell, and run.json with the run's
provenance and state. A run is created, started, resumed, appended to, finished and read back
only here; results.csv is read by one function (read_rows), into typed rows (lab.record)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from lab import ROOT, interpreters, record
from lab.matrix import Cell
from lab.record import CellResult, NotAnObject, RunMeta, mark_died, runner_identity, utc_now

RESULTS_DIR = ROOT / "results"

COLUMNS = record.COLUMNS  # one typed record owns the columns (lab/record.py)


def new_run_id(base: Path = RESULTS_DIR) -> str:
    """Sortable by time; a zero-padded suffix keeps two runs in the same second apart."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    run_id, i = stamp, 1
    while (base / run_id).exists():
        i += 1
        run_id = f"{stamp}-{i:02d}"
    return run_id


def resolve(run: str, base: Path = RESULTS_DIR) -> Path:
    """A run folder from its id, 'latest', or a path."""
    path = Path(run)
    if not path.is_absolute() and not path.exists():
        path = base / run
    path = path.resolve()
    if not (path / "run.json").is_file():
        raise FileNotFoundError(f"no run at {path} (expected a run id under {base})")
    return path


class RunDir:
    """One run's folder. A new run: create, start, append (a row per cell), finish. An earlier
    one: mark_if_died, retry_errors, done, resume, then append and finish as a new one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run_id = path.name
        self.csv_path = path / "results.csv"
        self.summaries = path / "k6"
        self.logs = path / "logs"
        self.timelines = path / "timelines"
        self.retried_path = path / "retried.csv"

    @classmethod
    def create(cls, base: Path = RESULTS_DIR) -> RunDir:
        base.mkdir(parents=True, exist_ok=True)
        while True:  # claim the id: mkdir fails if another run took it meanwhile
            run = cls(base / new_run_id(base))
            try:
                run.path.mkdir()
                break
            except FileExistsError:
                continue
        for p in (run.summaries, run.logs):
            p.mkdir()
        with run.csv_path.open("w", newline="") as f:
            csv.writer(f).writerow(COLUMNS)
        return run  # `latest` moves once the run has started (point_latest)

    def point_latest(self) -> None:
        link = self.path.parent / "latest"
        tmp = self.path.parent / f".latest-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(self.path.name)
        tmp.replace(link)  # atomic: readers never see a missing link

    def append(self, row: CellResult) -> None:
        """One cell's row, on disk before the next cell starts."""
        with self.csv_path.open("a", newline="") as f:
            csv.DictWriter(f, COLUMNS).writerow(row.to_csv())
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[CellResult]:
        return read_rows(self.csv_path)

    def done(self) -> set[str]:
        """The cells a resume skips: those with an ok row (an error row runs again)."""
        return {r.cell for r in self.rows() if r.status == "ok"}

    def retry_errors(self) -> int:
        """Move the error rows to retried.csv (kept, not lost) so that their cells run again;
        results.csv is rewritten atomically. Returns how many moved. The rows move as text,
        under the file's own header: an older file keeps its columns and values."""
        header, rows = _read_csv(self.csv_path)
        header = header or COLUMNS
        passed = [CellResult.from_csv(r).status == "ok" for r in rows]  # as done() reads them
        ok = [r for r, good in zip(rows, passed, strict=True) if good]
        errors = [r for r, good in zip(rows, passed, strict=True) if not good]
        if not errors:
            return 0
        new = not self.retried_path.exists()
        with self.retried_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, header, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerows(errors)
        self._rewrite(header, ok)
        return len(errors)

    def replace_rows(self, rows: list[CellResult]) -> None:
        """These rows in place of the ones of the same cells, results.csv rewritten atomically
        (the others kept as text, under the file's own header)."""
        by_cell = {r.cell: r.to_csv() for r in rows}
        header, kept = _read_csv(self.csv_path)
        self._rewrite(header or COLUMNS, [by_cell.get(r.get("cell", ""), r) for r in kept])

    def _rewrite(self, header: list[str], rows: list[dict[str, Any]]) -> None:
        """results.csv as these rows under this header, replaced atomically: a reader, or a
        run killed meanwhile, sees the old file or the new one, never half of one."""
        tmp = self.path / "results.csv.tmp"
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, header, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.csv_path)

    # --- run.json -----------------------------------------------------------------------------

    def meta(self) -> RunMeta:
        """run.json; raises OSError or ValueError when it cannot be read as an object."""
        return RunMeta.read(self.path)

    def write_meta(self, meta: RunMeta) -> None:
        meta.write(self.path)

    def start(
        self,
        cells: list[Cell],
        matrix: dict[str, Any],
        command: list[str],
        options: dict[str, Any],
        cpus: dict[str, list[int] | None],
        k6: str,
    ) -> RunMeta:
        """Write run.json before the first cell, so that an interrupted run can be resumed.
        k6: the load generator's binary, whose version provenance records."""
        meta = RunMeta(
            run_id=self.run_id,
            status="running",
            started_at=utc_now(),
            command=command,
            options=options,
            matrix=matrix,
            runner=runner_identity(),
            knobs={k: os.environ[k] for k in KNOBS if k in os.environ},
            cpus=cpus,
            **provenance(k6),
            servers={},
            interpreters=interpreters.used(cells, local=not options.get("url")),
            cells=[c.to_json() for c in cells],
        )
        self.write_meta(meta)
        return meta

    def resume(self, meta: RunMeta) -> None:
        """The run is running again, in this process: run.json says so before the first cell."""
        meta.status = "running"
        meta.runner = runner_identity()
        meta.died = None
        self.write_meta(meta)

    def record_database(self, database: dict[str, Any] | None) -> None:
        """The run's database (lab.proc.database's info: embedded or the user's), in run.json
        as soon as a run uses it, so that a run killed later still says which it was."""
        meta = self.meta()
        meta.database = database
        self.write_meta(meta)

    def record_upstream(self, upstream: dict[str, Any]) -> None:
        """The run's upstream service as it was started (its CPUs and scheduling), in run.json
        as soon as a cell needs it."""
        meta = self.meta()
        meta.upstream = upstream
        self.write_meta(meta)

    def record_stability(self, stability: dict[str, Any]) -> None:
        """The host's CPU speed so far (lab.stability), in run.json after the check and after
        each probe between cells, so that a run killed later still says how steady it was."""
        meta = self.meta()
        meta.stability = stability
        self.write_meta(meta)

    def finish(
        self,
        meta: RunMeta,
        status: str,
        servers: dict[str, Any],
        loadgen_costs: list[dict[str, Any]],
        database: dict[str, Any] | None = None,
        stability: dict[str, Any] | None = None,
        upstream: dict[str, Any] | None = None,
    ) -> None:
        """run.json's end: the servers' /info (the first a series answered wins, so a resumed
        run keeps what it recorded before), k6's costs, the database and the upstream service
        when this session used them (a resumed run's are the ones its last cells used), the
        host's stability this session measured, the status and when.
        Raises OSError when run.json cannot be written (a full disk)."""
        meta.servers = {**(meta.servers or {})}
        for series, info in servers.items():
            meta.servers.setdefault(series, info)
        if loadgen_costs:
            meta.loadgen = loadgen_costs
        if database is not None:
            meta.database = database
        if stability is not None:
            meta.stability = stability
        if upstream is not None:
            meta.upstream = upstream
        meta.status = status
        meta.finished_at = utc_now()
        self.write_meta(meta)

    def mark_if_died(self) -> RunMeta:
        """run.json, with a `running` run whose runner is gone marked `died` (on disk too; the
        rule is lab.record.mark_died, which the supervisor applies too). Raises OSError or
        ValueError when run.json cannot be read as an object."""
        return mark_died(self.path)


# Knobs the servers read from the environment, recorded in run.json.
KNOBS = ("WORKERS", "THREADS", "EXECUTOR_THREADS", "POOL_PROCESSES", "GOMAXPROCS")


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """results.csv as text: its header and its rows."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def read_rows(csv_path: Path) -> list[CellResult]:
    """The one reader of results.csv: every row that names a cell, typed (lab.record)."""
    if not csv_path.is_file():
        return []
    return [CellResult.from_csv(d) for d in _read_csv(csv_path)[1] if d.get("cell")]


# The runs a new run's estimate reads back (past_cell_seconds): the newest this many.
PAST_RUNS = 20


def past_cell_seconds(base: Path, skip: str = "", runs: int = PAST_RUNS) -> dict[str, float]:
    """How long each cell took on this machine, from the newest `runs` runs under `base`
    (skip: the run being made): a cell's key (Cell.key, CellResult.key) -> its newest ok
    row's cell_s. A folder that is not a run, or whose results.csv cannot be read, is passed
    over: an estimate is never worth a failed run."""
    try:
        folders = sorted(
            (p for p in base.iterdir() if p.is_dir() and not p.is_symlink() and p.name != skip),
            key=lambda p: p.name,
            reverse=True,
        )
    except OSError:
        return {}
    seconds: dict[str, float] = {}
    for folder in [p for p in folders if (p / "run.json").is_file()][:runs]:
        try:
            rows = read_rows(folder / "results.csv")
        except (OSError, ValueError, csv.Error, UnicodeDecodeError):
            continue
        for row in rows:
            if row.status == "ok" and row.cell_s and row.cell_s > 0:
                seconds.setdefault(row.key, row.cell_s)
    return seconds


@dataclass
class Run:
    """A run read back for the report and `lab compare`: whatever of it can be read, and the
    problems met reading it (a broken run.json is a problem to show, not a crash)."""

    path: Path
    meta: RunMeta
    rows: list[CellResult]
    timelines: list[tuple[str, dict[str, Any] | None]]  # (file name, data or None if unreadable)
    problems: list[str]


def read_run(path: Path) -> Run:
    problems: list[str] = []
    try:
        meta = RunMeta.read(path)
    except NotAnObject:
        meta = RunMeta()
        problems.append("run.json is not an object; provenance is missing")
    except (OSError, ValueError) as exc:
        meta = RunMeta()
        problems.append(f"run.json could not be read ({exc}); provenance is missing")
    timelines: list[tuple[str, dict[str, Any] | None]] = []
    for file in sorted((path / "timelines").glob("*.json")):
        try:
            data = json.loads(file.read_text())
            timelines.append((file.name, data if isinstance(data, dict) else None))
        except (OSError, ValueError):
            timelines.append((file.name, None))
    return Run(path, meta, read_rows(path / "results.csv"), timelines, problems)


DISK_LOW_BYTES = 1 << 20  # below this a cell's k6 summary and logs may not fit


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(
            cmd, capture_output=True, text=True, cwd=ROOT, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine() -> dict[str, Any]:
    cpu_model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "hostname": platform.node(),
    }


def provenance(k6: str) -> dict[str, Any]:
    return {
        "git_commit": _run("git", "rev-parse", "HEAD"),
        "git_dirty": bool(_run("git", "status", "--porcelain")),
        "machine": machine(),
        "versions": {
            "k6": _run(k6, "version"),
            "python": platform.python_version(),
            "go": _run("go", "version"),
            "node": _run(str(ROOT / ".tools/node/bin/node"), "--version"),
        },
    }
