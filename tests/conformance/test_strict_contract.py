"""The strict contract (v1.2) on every target x profile: one integer grammar, one rule for
repeated parameters, the total-wait cap, 405 with Allow: GET for every other method, JSON
404 — hand-written tables (tests/harness/strict.py) — and schemathesis, which generates valid and
invalid requests from contract/openapi.json and validates every answer against it."""

from __future__ import annotations

from typing import Any

import pytest
from harness import strict
from harness.support import get, request
from harness.targets import Served
from harness.timed import REFUSAL, Timed

from lab.contract import Endpoint, load

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
CAPPED = [e for e in CONTRACT.endpoints if e.max_service_ms is not None]


def assert_none(found: list[str], cases: list[strict.Expect]) -> None:
    shown = "\n".join(found[:8]) + (f"\n... and {len(found) - 8} more" if len(found) > 8 else "")
    assert not found, f"{len(found)} of {len(cases)} answers break the contract:\n{shown}"


@pytest.mark.parametrize(
    ("endpoint", "param"), strict.PARAM_CASES, ids=[f"{e.name}-{p}" for e, p in strict.PARAM_CASES]
)
def test_integer_grammar(served: Served, endpoint: Endpoint, param: str) -> None:
    cases = strict.grammar_cases(endpoint, param)
    assert_none(strict.problems(served.url, cases), cases)


@pytest.mark.parametrize("endpoint", strict.WITH_PARAMS, ids=[e.name for e in strict.WITH_PARAMS])
def test_repeated_and_unknown_params(served: Served, endpoint: Endpoint) -> None:
    cases = strict.repeat_cases(endpoint)
    assert_none(strict.problems(served.url, cases), cases)


@pytest.mark.parametrize("method", strict.METHODS)
def test_only_get(served: Served, method: str) -> None:
    cases = strict.method_cases(method)
    assert_none(strict.problems(served.url, cases), cases)


@pytest.mark.parametrize("method", strict.NOT_FOUND_METHODS)
def test_unknown_path(served: Served, method: str) -> None:
    cases = strict.not_found_cases(method)
    assert_none(strict.problems(served.url, cases), cases)
    assert get(served.url, "/hello").status == 200


def test_oversized_request_line(served: Served, record_property: Any) -> None:
    """A 64 KB query: most servers answer before the application (CONTRACT.md lists what each
    one says), Go's net/http passes it on (its limit is 1 MB) and the app ignores the unknown
    parameter. Recorded, not required to be JSON: refused with a 4xx, or answered by the
    application as the contract says; either way the server goes on."""
    try:
        reply = request(served.url, "/hello?pad=" + "a" * 65536)
        seen = f"{reply.status} {reply.content_type or '(no type)'} {str(reply.body)[:60]!r}"
        by_app = reply.status == 200 and isinstance(reply.body, dict)
        ok = 400 <= reply.status < 500 or (by_app and reply.body.get("endpoint") == "hello")
    except OSError as exc:  # a server may close the connection without answering
        seen, ok = f"connection closed: {exc!r}", True
    record_property("oversized_request_line", seen)
    print(f"{served.target.name}/{served.profile}: 64 KB query -> {seen}")
    assert ok, f"a 64 KB query should be refused with a 4xx or served as /hello: {seen}"
    assert get(served.url, "/hello").status == 200


def test_refused_at_once_while_loaded(served: Served, timed: Timed) -> None:
    """A 404, a 405 and a 400 answer at once while the server's pools are full (its
    /executor, a `def` pool of its own, or all request slots but one): a refusal that waits
    for a pool (Django logs every 4xx through the loop's default executor) is the answer's
    fault. One retry: a busy machine can delay one request. Checked with the other claims
    that mostly wait, several cases at a time (harness/timed.py)."""
    load = strict.refusal_load(served.info)
    if not load:
        pytest.skip(
            "one request slot and no other pool: a refusal waits for the request in service"
        )
    problem = timed[(served.target.name, served.profile)][REFUSAL]
    assert problem is None, problem


# --- schemathesis ------------------------------------------------------------------------------


@pytest.mark.default_profile_only  # the app's answers; the tables above run on every profile
@strict.SCHEMA.parametrize()
@strict.SETTINGS
def test_schemathesis(served: Served, case: Any) -> None:
    strict.call(case, served.url)


# Last for each server: a server that does not enforce the cap is left waiting 10-20 s.
@pytest.mark.parametrize("endpoint", CAPPED, ids=[e.name for e in CAPPED])
def test_total_wait_cap(served: Served, endpoint: Endpoint) -> None:
    cases = strict.cap_cases(endpoint)
    assert_none(strict.problems(served.url, cases), cases)
