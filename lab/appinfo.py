"""The parts of /info every Python target shares: what runs it, found from the live process."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import version
from typing import Any

from lab import knobs


def server() -> tuple[str, str]:
    """The server that runs this worker, and its version, from the modules it has loaded.
    gunicorn comes first: under gunicorn the uvicorn worker class loads uvicorn too."""
    if "gunicorn" in sys.modules:
        return "gunicorn", version("gunicorn")
    if "uvicorn" in sys.modules:
        return "uvicorn", version("uvicorn")
    if "hypercorn" in sys.modules:
        return "hypercorn", version("hypercorn")
    return "werkzeug", version("werkzeug")


def base(framework: str, target: str) -> dict[str, Any]:
    """Fields of /info that do not depend on the framework's concurrency model."""
    name, server_version = server()
    return {
        "endpoint": "info",
        "pid": os.getpid(),
        "target": os.environ.get("LAB_TARGET", target),
        "profile": os.environ.get("LAB_PROFILE", "manual"),
        "framework": framework,
        "framework_version": version(framework),
        "server": name,
        "server_version": server_version,
        "language": "python",
        "language_version": platform.python_version(),
        "cpus": knobs.cpus(),
    }


def check_capacity(capacity: dict[str, int | None]) -> dict[str, int | None]:
    """Fail loudly when a target's capacity table drifts from the contract's endpoints."""
    from lab.contract import load

    expected = {e.name for e in load().bench_endpoints()}
    if set(capacity) != expected:
        raise RuntimeError(f"capacity keys {sorted(capacity)} != contract {sorted(expected)}")
    return capacity
