"""flask/granian's capacity claim follows its live configuration (THREADS), timed by the
suite's check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness.claims import capacity_problem
from harness.support import get
from harness.targets import start_target

from lab.contract import load
from lab.proc import server
from lab.targets import find

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()


# --- the claim follows the live configuration, timed --------------------------------------------


@pytest.fixture(scope="module")
def two_threads(upstream: server.ServerProcess) -> Iterator[str]:
    """flask/granian with THREADS=2 (--blocking-threads 2) instead of the profile's 4."""
    proc = start_target(find("flask"), "granian", upstream.url, WORKERS="1", THREADS="2")
    yield proc.url
    assert proc.stop().clean


def test_the_wsgi_claim_follows_the_blocking_threads(two_threads: str) -> None:
    body = get(two_threads, "/info").body
    assert body["server_options"]["blocking_threads"] == 2
    assert body["threads"] == 2 and body["capacity"]["sync"] == 2
    assert capacity_problem(two_threads, CONTRACT["sync"], 2) is None
    # The profile's default (4), had /info written it down, is caught by the suite's check.
    problem = capacity_problem(two_threads, CONTRACT["sync"], 4)
    assert problem is not None and "should take 2 x" in problem, problem
