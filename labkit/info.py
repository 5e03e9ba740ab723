"""The parts of /info every Python target shares, found from the live process: what server runs
it (and its version), how long that server lets requests finish after SIGTERM, how many worker
processes it runs, the CPUs. The capacity table itself comes from the worker model
(labkit.eventloop, labkit.threaded)."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import version
from typing import Any

from lab.contract import load
from labkit import collector, knobs

collector.install()  # from the worker's start: the runner reads differences

# Servers found by the modules they load. gunicorn first: its uvicorn worker loads uvicorn too.
SERVERS = ("gunicorn", "granian", "uvicorn", "hypercorn")
# Each server's graceful-shutdown flag and its own default when the flag is absent
# (uvicorn: None, it waits for every request to finish however long that takes).
GRACEFUL_FLAGS: dict[str, tuple[str, float | None]] = {
    "gunicorn": ("--graceful-timeout", 30.0),
    "uvicorn": ("--timeout-graceful-shutdown", None),
    "hypercorn": ("--graceful-timeout", 3.0),
}


def server() -> tuple[str, str]:
    """The server that runs this worker, and its version, from the modules it has loaded;
    ("unknown", "") rather than a guess. A target that runs its own server (Flask's dev
    server, aiohttp's web.run_app) names it in base(server=...)."""
    for name in SERVERS:
        if name in sys.modules:
            return name, version(name)
    return "unknown", ""


def graceful_timeout_s(server_name: str, argv: list[str] | None = None) -> float | None:
    """The server's graceful timeout as its command line sets it (workers spawned by uvicorn
    and hypercorn get the parent's argv too), else the server's own default. granian's is
    --workers-kill-timeout, read by its own parser (labkit.granian)."""
    if server_name == "granian":
        from labkit import granian

        return granian.options(argv).workers_kill_timeout
    flag, default = GRACEFUL_FLAGS.get(server_name, ("", None))
    args = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(args):
        if flag and arg == flag and i + 1 < len(args):
            return float(args[i + 1])
        if flag and arg.startswith(flag + "="):
            return float(arg.split("=", 1)[1])
    return default


def workers(server_name: str | None = None) -> int:
    """Worker processes serving requests: what the server was told where the kit can read its
    options (granian's --workers), else WORKERS, which the manifests pass on as --workers."""
    if (server_name or server()[0]) == "granian":
        from labkit import granian

        return granian.options().workers
    return knobs.workers()


def server_options(server_name: str) -> dict[str, Any] | None:
    """The server's own concurrency options, for servers that have more than workers and
    threads (granian: blocking and runtime threads, backpressure, runtime mode, loop)."""
    if server_name == "granian":
        from labkit import granian

        return granian.options().as_info()
    return None


def base(
    framework: str,
    *,
    server_name: str | None = None,
    graceful_s: float | None = None,
) -> dict[str, Any]:
    """Fields of /info that do not depend on the framework's concurrency model."""
    name, server_version = (server_name, version(server_name)) if server_name else server()
    graceful = graceful_s if graceful_s is not None else graceful_timeout_s(name)
    return {
        "endpoint": "info",
        "pid": os.getpid(),
        "target": os.environ.get("LAB_TARGET", framework),
        "profile": os.environ.get("LAB_PROFILE", "manual"),
        "framework": framework,
        "framework_version": version(framework),
        "server": name,
        "server_version": server_version,
        "language": "python",
        "language_version": platform.python_version(),
        "python_implementation": sys.implementation.name,
        "gil_enabled": gil_enabled(),
        # a worker's own work (its handlers, inline /cpu) runs under its GIL: one CPU at a time
        "worker_cpus": 1 if gil_enabled() else None,
        "cpus": knobs.cpus(),
        "graceful_timeout_s": graceful,
        "collector": collector.totals(),
        **({"server_options": opts} if (opts := server_options(name)) else {}),
    }


def gil_enabled() -> bool:
    """Whether this process runs with the GIL: sys._is_gil_enabled() where it exists (3.13+;
    a free-threaded build turns the GIL back on for an extension not declared safe), else
    True (every older CPython has it)."""
    probe = getattr(sys, "_is_gil_enabled", None)
    return bool(probe()) if probe else True


def check_capacity(capacity: dict[str, int | None]) -> dict[str, int | None]:
    """Fail loudly when a target's capacity table drifts from the contract's endpoints."""
    expected = {e.name for e in load().bench_endpoints()}
    if set(capacity) != expected:
        raise RuntimeError(f"capacity keys {sorted(capacity)} != contract {sorted(expected)}")
    return capacity
