"""Every discovered target x profile (the conformance suite's cases), and starting one on a
free port."""

from __future__ import annotations

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
