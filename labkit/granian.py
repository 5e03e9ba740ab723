"""granian, as one of its workers sees it: the options the server runs with, read by granian's
own command-line parser (flags, then GRANIAN_* variables, then its defaults), so /info states
what the running server was told, never a constant.

granian's master starts its workers by fork (spawn on Python >= 3.14), and either way a
worker's sys.argv is the server's command line. On a free-threaded Python granian's workers
are threads of one process instead, which the kit refuses rather than misreport. Import this
module only under granian: labkit.info names the server by the modules its process has loaded.

What the options mean for capacity (per worker):
- WSGI: the Rust runtime hands each request to one of `blocking_threads` Python threads, which
  runs the app to the end; `backpressure` caps the connections a worker takes in at once. So a
  worker serves min(blocking_threads, backpressure) requests at a time, whatever the endpoint.
- ASGI: one asyncio loop per worker (blocking_threads is always 1: the thread that talks to
  the loop); the framework's own pools decide, as under uvicorn (labkit.eventloop).
- workers_kill_timeout: after SIGTERM a worker stops accepting and lets its requests in flight
  run; the master SIGKILLs a worker still busy after this long (None: it waits for ever)."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

from granian.cli import cli
from granian.constants import HTTPModes, Interfaces, RuntimeModes


@dataclass(frozen=True)
class Options:
    interface: str  # asgi, wsgi, ...
    workers: int
    blocking_threads: int  # per worker
    backpressure: int  # connections a worker takes in at once
    runtime_threads: int  # Rust threads per worker doing network I/O
    runtime_mode: str  # st: a single-threaded Rust runtime per thread; mt: one multi-threaded
    loop: str
    workers_kill_timeout: float | None  # seconds; None: the master waits for ever

    @property
    def wsgi_threads(self) -> int:
        """Requests one WSGI worker runs at once: a Python thread each, within backpressure."""
        return min(self.blocking_threads, self.backpressure)

    def as_info(self) -> dict[str, Any]:
        return asdict(self)


def options(argv: list[str] | None = None) -> Options:
    """granian's options as its CLI resolves them from `argv` (default: this process's) and the
    environment, with the values granian derives when an option is absent (its
    AbstractServer.__init__ and serve(), granian 2.8: tests/unit/test_kit.py compares the two)."""
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        # There granian's workers are threads of one process sharing one app: the kit's
        # worker = process model (its pools, /info's workers and pids) would not hold.
        raise RuntimeError("granian on free-threaded Python runs workers as threads: unsupported")
    args = sys.argv[1:] if argv is None else argv
    ctx = cli.make_context(
        "granian", list(args), auto_envvar_prefix="GRANIAN", resilient_parsing=True
    )
    p = ctx.params
    interface = Interfaces(p["interface"])
    workers = max(1, p["workers"])
    backpressure = max(1, p["backpressure"] or max(128, p["backlog"]) // workers)
    blocking = p["blocking_threads"]
    if blocking is None:
        blocking = max(1, backpressure // 2) if interface == Interfaces.WSGI else 1
    runtime_threads = max(1, p["runtime_threads"])
    mode = RuntimeModes(p["runtime_mode"])
    if mode == RuntimeModes.auto:
        multi = interface != Interfaces.RSGI or runtime_threads > 1 or p["http"] == HTTPModes.http2
        mode = RuntimeModes.mt if multi else RuntimeModes.st
    kill = p["workers_kill_timeout"]
    return Options(
        interface=interface.value,
        workers=workers,
        blocking_threads=blocking,
        backpressure=backpressure,
        runtime_threads=runtime_threads,
        runtime_mode=mode.value,
        loop=str(p["loop"].value),
        workers_kill_timeout=None if kill is None else float(kill),
    )
