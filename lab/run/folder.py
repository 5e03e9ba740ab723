"""Run folders: results/<run-id>/ with results.csv (one row per cell, flushed as each cell
ends), the raw k6 summary of every cell, and run.json with the run's provenance."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from lab import ROOT, record
from lab.record import CellResult

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

    def append(self, row: CellResult | dict[str, Any]) -> None:
        """One cell's row, on disk before the next cell starts. A dict is taken as columns
        (keys that are not columns are ignored)."""
        if isinstance(row, dict):
            row = CellResult(**{k: v for k, v in row.items() if k in COLUMNS})
        with self.csv_path.open("a", newline="") as f:
            csv.DictWriter(f, COLUMNS).writerow(row.to_csv())
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[dict[str, str]]:
        with self.csv_path.open(newline="") as f:
            return list(csv.DictReader(f))

    def retry_errors(self) -> int:
        """Move the error rows to retried.csv (kept, not lost) so that their cells run again;
        results.csv is rewritten atomically. Returns how many moved."""
        with self.csv_path.open(newline="") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or COLUMNS)
            rows = list(reader)
        errors = [r for r in rows if r.get("status") != "ok"]
        if not errors:
            return 0
        new = not self.retried_path.exists()
        with self.retried_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, header, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerows(errors)
        tmp = self.path / "results.csv.tmp"
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, header, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(r for r in rows if r.get("status") == "ok")
        tmp.replace(self.csv_path)
        return len(errors)

    def records(self) -> list[CellResult]:
        return [CellResult.from_csv(d) for d in self.rows() if d.get("cell")]

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Atomically: readers see the old run.json or the new one. On a full disk the old
        one stays and no partial file is left beside it."""
        tmp = self.path / "run.json.tmp"
        try:
            with tmp.open("w") as f:
                f.write(json.dumps(meta, indent=2, sort_keys=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.path / "run.json")
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())


DISK_LOW_BYTES = 1 << 20  # below this a cell's k6 summary and logs may not fit


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def runner_alive(meta: dict[str, Any]) -> bool:
    """Whether the process that runs this run still exists (same pid, same start time)."""
    runner = meta.get("runner") or {}
    pid, started = runner.get("pid"), runner.get("started")
    if not isinstance(pid, int) or runner.get("host", platform.node()) != platform.node():
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(started)) < 1.0
    except (psutil.Error, TypeError, ValueError):
        return False


def mark_if_died(run: RunDir) -> dict[str, Any]:
    """run.json, with a `running` run whose runner is gone marked `died` (on disk too)."""
    meta = run.meta()
    if meta.get("status") == "running" and not runner_alive(meta):
        meta["status"] = "died"
        meta["died"] = "found without its runner: it was killed or its machine stopped"
        with contextlib.suppress(OSError):
            run.write_meta(meta)
    return meta


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
        },
    }
