"""The conformance suite: every discovered target x profile, started for real, is checked
against the contract: bodies, bad input, single-request timing, every capacity claim in
/info timed with real concurrent requests (waiting and CPU endpoints), the worker processes
that really serve, upstream calls counted at the upstream, and a clean shutdown.
The strict contract's edge cases and schemathesis are in test_strict_contract.py, stopping
under load in test_shutdown.py, the database endpoints' claims (counted at the database) in
test_db_claims.py.

Each server runs with WORKERS=1 so that a batch of concurrent requests cannot be split
unevenly between worker processes by the kernel; test_shutdown.py checks the claims and the
processes with WORKERS=2."""

from __future__ import annotations

from typing import Any

import pytest
from harness.claims import (
    TIMED_COLLECTORS,
    collector_problem,
    cpu_claim_problem,
    process_problem,
    query,
    single_timing_problem,
    upstream_calls_problem,
)
from harness.support import Reply, get, string_values
from harness.targets import Served
from harness.timed import Timed
from jsonschema import Draft202012Validator

from lab.contract import Contract, Endpoint, load
from lab.proc import server

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
BENCH = CONTRACT.bench_endpoints()
WAITING = [e for e in BENCH if e.kind in ("sleep", "upstream")]
WITH_PARAMS = [e for e in CONTRACT.endpoints if e.params]
CPU = [e for e in BENCH if e.kind == "cpu"]
UPSTREAM = [e for e in BENCH if e.kind == "upstream"]

MAX_PROBE = 100  # requests in one batch on a 2-CPU test machine
DB_ERROR = CONTRACT.error("database", reason="")  # "database: ", the start of every reason


def schema_for(endpoint: Endpoint, status: str = "200") -> Draft202012Validator:
    doc = _openapi()
    ref = doc["paths"][endpoint.path]["get"]["responses"][status]["$ref"]
    response = doc["components"]["responses"][ref.rsplit("/", 1)[1]]
    schema = response["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": doc["components"]})


def _openapi() -> dict[str, Any]:
    import json

    from lab.contract import OPENAPI

    return json.loads(OPENAPI.read_text())


def assert_json(reply: Reply) -> None:
    assert reply.content_type.startswith("application/json"), reply.content_type
    assert isinstance(reply.body, dict), reply.body


# --- 1. every endpoint answers as the contract says -------------------------------------


@pytest.mark.parametrize("endpoint", CONTRACT.endpoints, ids=CONTRACT.names())
def test_endpoint_body(served: Served, endpoint: Endpoint) -> None:
    # Defaults from the contract, except the slow ones, which get small explicit values.
    values = {k: v for k, v in {"ms": 20, "n": 3}.items() if endpoint.param(k)}
    if endpoint.kind == "cpu":
        values = {}  # the default n is a test vector
    reply = get(served.url, endpoint.path + query(values))
    assert reply.status == 200, reply.body
    assert_json(reply)
    errors = [e.message for e in schema_for(endpoint).iter_errors(reply.body)]
    assert not errors, errors
    assert reply.body["endpoint"] == endpoint.name
    assert reply.body["pid"] in {p.pid for p in served.proc.tree()}, "pid is not a server process"
    for name, value in endpoint.fields.items():
        assert reply.body[name] == value
    for name, value in {**endpoint.defaults(), **values}.items():
        if name in reply.body:
            assert reply.body[name] == value, f"{name} echoed wrong"
    if endpoint.kind == "upstream":
        assert reply.body["statuses"] == [200] * values["n"]


@pytest.mark.parametrize("endpoint", ["cpu", "cpu-pool"])
def test_cpu_vectors(served: Served, contract: Contract, endpoint: str) -> None:
    for n, expected in contract.cpu_vectors():
        reply = get(served.url, f"/{endpoint}?n={n}")
        assert reply.status == 200, reply.body
        assert reply.body["result"] == expected, f"n={n}"


def test_info(served: Served) -> None:
    info = served.info
    target, profile = served.proc.env["LAB_TARGET"], served.proc.env["LAB_PROFILE"]
    assert (info["target"], info["profile"]) == (target, profile)
    assert info["workers"] == 1
    assert info["cpus"] >= 1
    graceful = info.get("graceful_timeout_s")
    assert isinstance(graceful, int | float) and 0 <= graceful <= 3, (
        f"graceful_timeout_s must be set explicitly, at most 3 s: {graceful!r}"
    )
    assert set(info["capacity"]) == {e.name for e in BENCH}
    for name, cap in info["capacity"].items():
        assert cap is None or (isinstance(cap, int) and cap >= 1), (name, cap)


# --- 2. bad input is refused with a clear 4xx, and the server goes on ----------------------


def bad_values(endpoint: Endpoint) -> list[tuple[str, str]]:
    cases = []
    for p in endpoint.params:
        for raw in (p.minimum - 1, p.maximum + 1, "abc", "1.5", "", "99999999999999999999"):
            cases.append((p.name, str(raw)))
    return cases


BAD_CASES = [(e, name, raw) for e in WITH_PARAMS for name, raw in bad_values(e)]


@pytest.mark.parametrize(
    ("endpoint", "param", "raw"), BAD_CASES, ids=[f"{e.name}-{p}={r}" for e, p, r in BAD_CASES]
)
def test_bad_input(served: Served, endpoint: Endpoint, param: str, raw: str) -> None:
    reply = get(served.url, f"{endpoint.path}?{param}={raw}", timeout=5)
    assert reply.status == 400, (reply.status, reply.body)
    assert_json(reply)
    assert param in string_values(reply.body), f"the error does not name {param!r}: {reply.body}"
    assert reply.seconds < 1.0, "a refused request must not do the work"


def test_unknown_path_and_still_serving(served: Served) -> None:
    assert get(served.url, "/no-such-endpoint").status == 404
    assert get(served.url, "/hello").status == 200


# --- 3. one request takes as long as its waits, no less --------------------------------------


# The app's own waits: every profile's batches are timed by the capacity claims (section 4),
# which fail an answer before its work as well.
@pytest.mark.default_profile_only
@pytest.mark.parametrize("endpoint", WAITING, ids=[e.name for e in WAITING])
def test_single_request_timing(served: Served, endpoint: Endpoint) -> None:
    problem = single_timing_problem(served.url, endpoint)
    assert problem is None, problem


# --- 4. capacity claims hold under real concurrency ----------------------------------------------


def checkable_capacity(served: Served, endpoint: Endpoint) -> int | None:
    """The endpoint's claimed capacity (/info); the test is skipped if checking it takes more
    than MAX_PROBE concurrent requests."""
    capacity = served.info["capacity"][endpoint.name]
    if capacity is not None and capacity + 1 > MAX_PROBE:
        pytest.skip(f"capacity {capacity} needs more than {MAX_PROBE} concurrent requests")
    return capacity


# Timed with the other claims that mostly wait, several cases at a time on servers of their
# own (harness/timed.py); within a case, the unbounded claims at once.
@pytest.mark.parametrize("endpoint", WAITING, ids=[e.name for e in WAITING])
def test_capacity_claim(served: Served, endpoint: Endpoint, timed: Timed) -> None:
    checkable_capacity(served, endpoint)  # skips a capacity too large to check
    problem = timed[(served.target.name, served.profile)][endpoint.name]
    assert problem is None, problem


# --- 5. CPU claims hold on the CPUs the server may use -------------------------------------------


@pytest.mark.parametrize("endpoint", CPU, ids=[e.name for e in CPU])
def test_cpu_claim(served: Served, endpoint: Endpoint) -> None:
    checkable_capacity(served, endpoint)  # skips a capacity too large to check
    problem = cpu_claim_problem(served.url, endpoint, served.info)
    assert problem is None, problem


# --- 6. upstream calls happen, as many and as concurrent as the endpoint says -------------------


@pytest.mark.parametrize("endpoint", UPSTREAM, ids=[e.name for e in UPSTREAM])
def test_upstream_calls_counted_at_the_upstream(
    served: Served, upstream: server.ServerProcess, endpoint: Endpoint
) -> None:
    problem = upstream_calls_problem(served.url, upstream.url, endpoint)
    assert problem is None, problem


# --- 7. /info's workers are the processes that serve ---------------------------------------------


def test_processes_serving(served: Served) -> None:
    problem = process_problem(served.proc, served.info)
    assert problem is None, problem


# --- 8. the collector's time, where the runtime states it --------------------------------------


def test_collector_timed(served: Served) -> None:
    """Python and Node targets state /info's collector (the runner reads it around the
    calibration and the load); it counts the collections real requests cause and stays
    within the process's CPU time."""
    language = served.info.get("language")
    if language not in TIMED_COLLECTORS:
        pytest.skip(f"{language}'s kit does not time its collector")
    assert "collector" in served.info, f"a {language} target states /info's collector"
    problem = collector_problem(served.url)
    assert problem is None, problem
