"""The concurrency knobs every Python target reads from its environment.

One rule for every target, so that no target is tuned while others stay at defaults:
- WORKERS: server processes; default one per CPU this process may run on.
- THREADS: threads per worker that run synchronous handlers (gunicorn gthread threads,
  granian's WSGI --blocking-threads, anyio's thread limiter for Starlette/FastAPI, the default
  executor for Quart); unset means the framework's own default, which /info reports as it
  finds it. The manifests pass it on to the servers' flags ({threads}).
- GRANIAN_RUNTIME_THREADS (granian only) is granian's own variable: granian reads it, and
  labkit.granian reports it.
- EXECUTOR_THREADS: asyncio's default executor (used by /executor); default Python's own
  rule, min(32, os.cpu_count() + 4).
- POOL_PROCESSES: processes per worker in the /cpu-pool process pool; default CPUs.
- DB_POOL: connections per worker in each database pool (labkit.db), minimum and maximum
  alike; unset means the driver's own default (asyncpg 10, psycopg_pool 4).
"""

from __future__ import annotations

import os


def cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's core count)."""
    return len(os.sched_getaffinity(0))


def _int_env(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = int(raw)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def workers() -> int:
    return _int_env("WORKERS", cpus())  # type: ignore[return-value]


def threads(default: int | None = None) -> int | None:
    return _int_env("THREADS", default)


def executor_threads() -> int:
    # Python 3.11's ThreadPoolExecutor default, written out so it is explicit and recorded.
    return _int_env("EXECUTOR_THREADS", min(32, (os.cpu_count() or 1) + 4))  # type: ignore[return-value]


def pool_processes() -> int:
    return _int_env("POOL_PROCESSES", cpus())  # type: ignore[return-value]


def db_pool() -> int | None:
    return _int_env("DB_POOL", None)  # the contract's x-lab.database pool-env


def shared_executor_threads() -> int:
    """For a framework that runs `def` handlers in the loop's default executor (Quart): THREADS
    and EXECUTOR_THREADS then size one and the same pool, so if both are set they must agree
    rather than one being silently ignored."""
    threads_ = threads()
    if threads_ is None:
        return executor_threads()
    if os.environ.get("EXECUTOR_THREADS", "").strip() and executor_threads() != threads_:
        raise ValueError(f"THREADS ({threads_}) and EXECUTOR_THREADS size one pool: must agree")
    return threads_
