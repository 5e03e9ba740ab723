"""The report's "The database" section: each target's connection pools as its /info states
them (run.json `servers`), the run's PostgreSQL (run.json `database`), and every database
cell predicted vs measured beside the /hello canary sent to the same server during its load:
what a loop blocked by a synchronous driver (/db-blocking) or requests queued for an exhausted
pool (/db with more VUs than connections) do to a request that needs no database. Left out of
a run without database cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab import model
from lab.contract import load as load_contract
from lab.report import charts
from lab.report.figures import Chart, ChartWriter
from lab.report.format import capacity, plain
from lab.report.groups import Group, GroupedRun
from lab.report.sections import endpoint_labels

# Without a readable contract: the database endpoints of issue 20.
DB_ENDPOINTS = ("db", "db-blocking", "db-rows")
# What of run.json's `database` the section shows (the provenance has all of it).
SERVER_KEYS = ("kind", "url", "server_version", "max_connections", "cpus")


@dataclass(frozen=True)
class Pool:
    series: str  # target/profile
    workers: int | None
    driver: str  # e.g. "asyncpg 0.30.0"
    pool: Any  # connections per worker for /db and /db-rows
    pool_source: str  # "default" or "DB_POOL"
    blocking_driver: str
    blocking_pool: Any
    blocking: str  # "event loop" (the anti-pattern blocks it) or "same as /db"
    capacity: dict[str, Any]  # requests at once per database endpoint


@dataclass(frozen=True)
class DbCell:
    series: str
    endpoint: str  # with the params when one endpoint ran with several
    vus: int
    rate: int
    capacity: int | None  # requests served at once (/info)
    queued: int | None  # VUs beyond the capacity: waiting (for a connection, the loop, a CPU)
    pool_bound: bool  # the capacity is the pool's (bound db-pool)
    rps: float | None
    predicted_rps: float | None
    efficiency: float | None
    verdict: str
    bound: str  # the limiting resource with its number (lab.model.limit_text; the results
    # table adds a flood's note)
    db_cpu_ms: float | None  # the database's CPU per request, calibrated
    db_cpu_pct: float | None  # the database's CPU during the load
    canary_p50: float | None
    canary_p99: float | None


@dataclass(frozen=True)
class Database:
    server: dict[str, Any]  # the run's PostgreSQL (a few keys of run.json's `database`)
    pools: list[Pool]
    cells: list[DbCell]
    chart: Chart | None  # the canary's p99 and p50 under each database cell


def db_endpoints() -> set[str]:
    try:
        return {e.name for e in load_contract().endpoints if e.kind == "db"}
    except (OSError, ValueError, KeyError):
        return set(DB_ENDPOINTS)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _driver(db: dict[str, Any], name: str) -> str:
    driver, version = db.get(name), db.get(f"{name}_version")
    return " ".join(_text(v) for v in (driver, version) if v is not None) or "-"


def pools(servers: dict[str, Any]) -> list[Pool]:
    """One line per server that stated a database object in its /info."""
    found = []
    for series, info in servers.items():
        db = info.get("database") if isinstance(info, dict) else None
        if not isinstance(db, dict):
            continue
        capacity = info.get("capacity") if isinstance(info.get("capacity"), dict) else {}
        found.append(
            Pool(
                series=series,
                workers=info.get("workers"),
                driver=_driver(db, "driver"),
                pool=db.get("pool"),
                pool_source=_text(db.get("pool_source")),
                blocking_driver=_text(db.get("blocking_driver")),
                blocking_pool=db.get("blocking_pool"),
                blocking=_text(db.get("blocking")),
                capacity={k: v for k, v in capacity.items() if k.startswith("db")},
            )
        )
    return found


def _cell(g: Group, label: str, servers: dict[str, Any]) -> DbCell:
    r = g.first
    capacity = next((x.capacity for x in g.ok if x.capacity), r.capacity)
    vus = r.vus or 0
    info = servers.get(f"{r.target}/{r.profile}")
    return DbCell(
        series=g.series,
        endpoint=label,
        vus=vus,
        rate=r.rate or 0,
        capacity=capacity,
        queued=max(0, vus - capacity) if capacity else None,
        pool_bound=g.bound == "db-pool"
        or (isinstance(info, dict) and model.pool_bound(r.endpoint, info)),
        rps=g.rps,
        predicted_rps=g.stat("predicted_rps"),
        efficiency=g.efficiency,
        verdict=g.verdict,
        bound=_limit(g),
        db_cpu_ms=g.stat("db_cpu_ms"),
        db_cpu_pct=g.stat("db_cpu_pct"),
        canary_p50=g.stat("canary_p50_ms"),
        canary_p99=g.stat("canary_p99_ms"),
    )


def _limit(g: Group) -> str:
    row = next((r for r in g.ok if r.bound == g.bound), None)
    return model.limit_text(g.bound, row) if row and g.bound else "-"


def cells(run: GroupedRun) -> list[DbCell]:
    """Every database cell of the run (repeats folded), in the report's order."""
    names = db_endpoints()
    groups = [g for g in run.groups if g.first.endpoint in names]
    servers = run.meta.servers or {}
    labels = endpoint_labels(groups)
    return [_cell(g, labels[g.key], servers) for g in groups]


def database(run: GroupedRun, draw: ChartWriter) -> Database | None:
    found = cells(run)
    if not found:
        return None
    bars = [
        charts.Bar(c.series, f"{c.endpoint} · {c.vus} VUs", c.canary_p99, c.canary_p50)
        for c in found
        if c.canary_p99 is not None
    ]
    chart = (
        draw("database-canary", charts.canary(bars, "/hello canary under the database cells"))
        if bars
        else None
    )
    meta = run.meta.database or {}
    server = {k: meta[k] for k in SERVER_KEYS if k in meta}
    return Database(server, pools(run.meta.servers or {}), found, chart)


def markdown(run: GroupedRun) -> str:
    """summary.md's database part: the pools, and each database cell with its canary ('' for a
    run without database cells)."""
    found = cells(run)
    if not found:
        return ""
    lines = ["## The database", ""]
    table = pools(run.meta.servers or {})
    if table:
        lines += [
            "| target/profile | workers | driver | pool per worker | /db-blocking | capacity |",
            "|---|--:|---|--:|---|---|",
        ]
        lines += [
            f"| {p.series} | {_text(p.workers)} | {p.driver} | {_text(p.pool)} "
            f"({p.pool_source}) | {p.blocking} | {capacity(p.capacity)} |"
            for p in table
        ]
        lines.append("")
    lines += [
        "| target/profile | endpoint | VUs | capacity | rps | predicted rps | bound "
        "| canary p50 ms | canary p99 ms |",
        "|---|---|--:|--:|--:|--:|---|--:|--:|",
    ]
    for c in found:
        row = [c.series, c.endpoint, str(c.vus), _text(c.capacity), plain(c.rps),
               plain(c.predicted_rps), c.bound, plain(c.canary_p50),
               plain(c.canary_p99)]  # fmt: skip
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in row) + " |")
    return "\n".join(lines) + "\n"
