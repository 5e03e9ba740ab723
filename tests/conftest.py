"""Shared fixtures: the contract, the upstream service, and every discovered target x profile."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab import server
from lab.contract import Contract, load
from lab.targets import Target, discover

TARGETS = discover()
CASES = [(t, p) for t in TARGETS for p in t.profiles]
CASE_IDS = [f"{t.name}-{p}" for t, p in CASES]


@pytest.fixture(scope="session")
def contract() -> Contract:
    return load()


@pytest.fixture(scope="session")
def upstream() -> Iterator[server.ServerProcess]:
    """The Go upstream service, shared by every target in the session."""
    proc = server.upstream_server().start()
    yield proc
    report = proc.stop()
    assert report.clean, f"upstream left {report.leftover}"


def start_target(
    target: Target, profile: str, upstream_url: str, **env: str
) -> server.ServerProcess:
    return server.target_server(target, profile, upstream_url=upstream_url, env=env).start()
