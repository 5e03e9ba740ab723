"""One measured cell as a typed record: `CellResult` owns every column of results.csv, its
type and its CSV form. The runner fills one, `RunDir.append` writes it, and `lab.report.groups` (the
report, `lab compare`) reads it back with the same types. A column is added here, once."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, get_type_hints


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
    rps: float | None = None
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
    k6_cpu_pct: float | None = None
    upstream_cpu_pct: float | None = None
    loadgen_bound: bool | None = None
    server_cpu_bound: bool | None = None
    # what the server says of itself (/info) and where it ran
    workers: int | None = None
    threads: int | None = None
    capacity: int | None = None
    server_cpus: str = ""
    k6_cpus: str = ""
    # the model's inputs, measured before the load, and its prediction
    service_ms: float | None = None  # waiting time S per request (from the contract)
    server_cpu_ms: float | None = None  # server tree CPU per request, idle server
    overhead_ms: float | None = None  # per-request round trip beyond the server's CPU
    overshoot_ms: float | None = None  # how late a request's waits end (holds its slot)
    upstream_cpu_ms: float | None = None  # upstream service CPU per request (/upstream)
    loadgen_us: float | None = None  # k6's cost per request (µs), measured once per VU count
    loadgen_rps_max: float | None = None  # the load side's ceiling on its CPUs
    predicted_rps: float | None = None
    predicted_latency_ms: float | None = None
    bound: str = ""  # the limiting resource: slots, server-cpu, loadgen, upstream-cpu, vus, ...
    efficiency: float | None = None
    verdict: str = ""
    censored: str = ""  # why the cell could not complete enough requests to be judged
    # timings of the cell
    server_start_s: float | None = None
    server_stop_s: float | None = None
    cell_s: float | None = None
    started_at: str = ""

    @property
    def key(self) -> str:
        """The cell's id without its #repeat suffix: what repeats have in common."""
        return self.cell.rsplit("#", 1)[0]

    @property
    def params(self) -> str:
        cell = self.cell
        return cell.split("?", 1)[1].split("@", 1)[0] if "?" in cell else ""

    def __getitem__(self, name: str) -> Any:
        """Column access by name, as for the dict rows older callers pass around."""
        if name not in _types():
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in _types() else default

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
