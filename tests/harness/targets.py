"""Every discovered target x profile (the conformance suite's cases), and starting one on a
free port."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lab.proc import server
from lab.targets import Target, discover

TARGETS = discover()
CASES = [(t, p) for t in TARGETS for p in t.profiles]
CASE_IDS = [f"{t.name}-{p}" for t, p in CASES]


def start_target(
    target: Target, profile: str, upstream_url: str, **env: str
) -> server.ServerProcess:
    """Start a target on a free port. Another process on this shared machine may take the
    port between the pick and the bind: then try the next free port (twice at most)."""
    for attempt in range(3):
        proc = server.target_server(target, profile, upstream_url=upstream_url, env=env)
        try:
            return proc.start()
        except server.ServerError as exc:
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def start_served(
    target: Target, profile: str, upstream_url: str, database_url: str
) -> server.ServerProcess:
    """A case's server as the suite serves it (`served`, and the timed claims' own): WORKERS=1,
    so that a batch of concurrent requests cannot be split unevenly between worker processes
    by the kernel, and the session's database."""
    return start_target(target, profile, upstream_url, WORKERS="1", DATABASE_URL=database_url)


@dataclass
class Served:
    """A running target x profile with WORKERS=1, and its /info as it started."""

    target: Target
    profile: str
    proc: server.ServerProcess
    info: dict[str, Any]

    @property
    def url(self) -> str:
        return self.proc.url


Case = tuple[str, str]  # (target's name, profile)


class NextServer:
    """The next case's server, started in the background while the current case's last tests
    run: those that check answers, not timings (the strict tables, schemathesis). A start is
    0.5-4.5 s of CPU that the suite otherwise waits for 31 times. `take` hands it over (or
    raises what its start raised); `stop_all` stops any never taken (a run cut short)."""

    def __init__(self, start: Callable[[Target, str], server.ServerProcess]) -> None:
        self._start = start  # starts one case's server, as `served` does
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="next-server")
        self._started: dict[Case, Future[server.ServerProcess]] = {}

    def start(self, target: Target, profile: str) -> None:
        if (target.name, profile) not in self._started:
            self._started[(target.name, profile)] = self._pool.submit(self._start, target, profile)

    def take(self, target: Target, profile: str) -> server.ServerProcess:
        """The case's server: the one started ahead, or one started now."""
        started = self._started.pop((target.name, profile), None)
        return started.result() if started else self._start(target, profile)

    def stop_all(self) -> None:
        for started in self._started.values():
            with contextlib.suppress(server.ServerError):  # never ran: its log says why
                started.result().stop()
        self._started.clear()
        self._pool.shutdown()
