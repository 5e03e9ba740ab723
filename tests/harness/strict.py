"""The strict contract's edge cases as data, the checks that compare a server's answer with
them, and schemathesis (the schema, how its tests run); shared by test_strict_contract.py and
the bites. Every expected message comes
from the contract's x-lab.errors templates."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, settings

from harness.support import Raw, request
from lab.contract import OPENAPI, Endpoint, load

CONTRACT = load()
WITH_PARAMS = [e for e in CONTRACT.endpoints if e.params]
PARAM_CASES = [(e, p.name) for e in WITH_PARAMS for p in e.params]
METHODS = ["HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH"]

# Raw query values (already percent-encoded as sent) outside the integer grammar, and why.
OFF_GRAMMAR = {
    "": "empty",
    "1.0": "decimal point",
    "1_0": "underscore (int() reads 10)",
    "+5": "sign (decoded from a query, '+' is a space)",
    "%2B5": "encoded sign",
    "-1": "negative",
    "%205": "leading space",
    "5%20": "trailing space",
    "007": "leading zeros",
    "00000000000001": "leading zeros",
    "abc": "not a number",
    "1e3": "exponent",
    "0x10": "hex",
    "%D9%A3": "non-ASCII digit (Arabic-Indic 3)",
    "1234567890": "ten digits",
}


def grammar_error(name: str) -> dict[str, str]:
    return {"error": CONTRACT.error("grammar", name=name), "param": name}


def bounds_error(endpoint: Endpoint, name: str) -> dict[str, str]:
    p = endpoint.param(name)
    assert p is not None
    return {
        "error": CONTRACT.error("bounds", name=name, minimum=p.minimum, maximum=p.maximum),
        "param": name,
    }


def repeated_error(name: str) -> dict[str, str]:
    return {"error": CONTRACT.error("repeated", name=name), "param": name}


def cap_error(endpoint: Endpoint) -> dict[str, str]:
    errors = CONTRACT.extensions["errors"]
    return {
        "error": CONTRACT.error("max-service", max_service_ms=endpoint.max_service_ms),
        "param": errors["max-service-param"],
    }


def small_values(endpoint: Endpoint) -> dict[str, str]:
    """Valid values that make a request quick, for the parameters not under test."""
    values = {"ms": "1", "n": "2"} if endpoint.kind != "cpu" else {"n": "1000"}
    return {k: v for k, v in values.items() if endpoint.param(k)}


def query(pairs: list[tuple[str, str]]) -> str:
    return "?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else ""


@dataclass
class Expect:
    """One request and the answer the strict contract requires."""

    path: str
    status: int
    body: dict[str, Any] | None  # None: any JSON object with "endpoint" (a 200)
    why: str
    method: str = "GET"


REFUSE_WITHIN_S = 2.0  # a refused request does no work: waiting longer is the answer's fault


def answer_problem(base: str, expect: Expect) -> str | None:
    """Why the server's answer differs from the expected one, or None."""
    timeout = REFUSE_WITHIN_S if expect.status >= 400 else 10.0
    try:
        reply = request(base, expect.path, method=expect.method, timeout=timeout)
    except TimeoutError:
        return (
            f"{expect.method} {expect.path} ({expect.why}): no answer within {timeout:.0f}s, "
            f"want {expect.status} at once"
        )
    return reply_problem(reply, expect)


def reply_problem(reply: Raw, expect: Expect) -> str | None:
    where = f"{expect.method} {expect.path} ({expect.why})"
    if reply.status != expect.status:
        return f"{where}: status {reply.status}, want {expect.status}: {str(reply.body)[:120]}"
    if expect.status >= 400 and reply.seconds > 1.0:
        return f"{where}: a refused request took {reply.seconds:.2f}s: it did work"
    if expect.status == 405 and reply.headers.get("allow") != "GET":
        return f"{where}: Allow is {reply.headers.get('allow')!r}, want 'GET'"
    if expect.method == "HEAD":
        return None  # headers only
    if not reply.content_type.startswith("application/json"):
        return f"{where}: Content-Type {reply.content_type!r}, want application/json"
    if expect.body is None:
        if not (isinstance(reply.body, dict) and "endpoint" in reply.body):
            return f"{where}: body {str(reply.body)[:120]}"
    elif reply.body != expect.body:
        return f"{where}: body {reply.body}, want {expect.body}"
    return None


def problems(base: str, cases: list[Expect]) -> list[str]:
    return [p for p in (answer_problem(base, c) for c in cases) if p]


# --- the tables ----------------------------------------------------------------------------


def grammar_cases(endpoint: Endpoint, name: str) -> list[Expect]:
    """Every off-grammar value of one parameter is refused with the grammar error; the
    smallest and largest values in bounds are read."""
    others = [(k, v) for k, v in small_values(endpoint).items() if k != name]
    p = endpoint.param(name)
    assert p is not None
    cases = [
        Expect(endpoint.path + query([*others, (name, raw)]), 400, grammar_error(name), why)
        for raw, why in OFF_GRAMMAR.items()
    ]
    cases += [
        Expect(
            endpoint.path + query([*others, (name, str(p.maximum + 1))]),
            400,
            bounds_error(endpoint, name),
            "above the maximum",
        ),
        Expect(
            endpoint.path + query([*others, (name, "999999999")]),
            400,
            bounds_error(endpoint, name),
            "nine digits, far out of bounds",
        ),
    ]
    if p.minimum > 0:
        below = str(p.minimum - 1)
        cases.append(
            Expect(
                endpoint.path + query([*others, (name, below)]),
                400,
                bounds_error(endpoint, name),
                "below the minimum",
            )
        )
    accepted = [p.minimum]
    if name == "n" and endpoint.kind != "cpu":
        accepted.append(p.maximum)  # with ms=0, n at its maximum is quick
    for value in accepted:
        values = {**dict(others), name: str(value)}
        if name == "n" and endpoint.kind != "cpu":
            values["ms"] = "0"
        pairs = [(q.name, values[q.name]) for q in endpoint.params if q.name in values]
        cases.append(Expect(endpoint.path + query(pairs), 200, None, f"{name}={value} is read"))
    return cases


def repeat_cases(endpoint: Endpoint) -> list[Expect]:
    """A parameter given twice is refused (even with the same value); unknown ones are
    ignored; the first failing parameter in contract order answers."""
    values = small_values(endpoint)
    cases = []
    for name in values:
        others = [(k, v) for k, v in values.items() if k != name]
        for twice in (["1", "2"], ["2", "2"]):
            pairs = [*others, *((name, v) for v in twice)]
            cases.append(
                Expect(endpoint.path + query(pairs), 400, repeated_error(name), "given twice")
            )
    pairs = [*values.items(), ("unknown", "x"), ("ms_", "abc")]
    cases.append(Expect(endpoint.path + query(pairs), 200, None, "unknown params are ignored"))
    names = [p.name for p in endpoint.params]
    if len(names) == 2:
        first, second = names
        # Both bad: the first in contract order answers, whatever the query's order.
        pairs = [(second, "abc"), (first, "x")]
        cases.append(
            Expect(endpoint.path + query(pairs), 400, grammar_error(first), "first param first")
        )
        pairs = [(second, "1"), (second, "1"), (first, "1.0")]
        cases.append(
            Expect(endpoint.path + query(pairs), 400, grammar_error(first), "ms checked before n")
        )
        pairs = [(first, "1"), (second, "abc"), (second, "1")]
        cases.append(
            Expect(endpoint.path + query(pairs), 400, repeated_error(second), "repeated first")
        )
    return cases


def cap_cases(endpoint: Endpoint) -> list[Expect]:
    """The total-wait cap: n * ms over max_service_ms is refused after the params' own checks."""
    assert endpoint.max_service_ms is not None
    cap = endpoint.max_service_ms
    n_max = endpoint.param("n").maximum  # type: ignore[union-attr]
    over_ms = cap // n_max + 1
    return [
        Expect(f"{endpoint.path}?ms={over_ms}&n={n_max}", 400, cap_error(endpoint), "over"),
        Expect(f"{endpoint.path}?ms=10000&n=2", 400, cap_error(endpoint), "twice the cap"),
        Expect(f"{endpoint.path}?ms=10001&n=100", 400, bounds_error(endpoint, "ms"), "ms first"),
        Expect(f"{endpoint.path}?ms=5001&n=2", 400, cap_error(endpoint), "just over"),
        Expect(f"{endpoint.path}?ms=0&n={n_max}", 200, None, "zero wait is within the cap"),
    ]


def method_cases(method: str) -> list[Expect]:
    """Every contract path answers any method but GET with 405, Allow: GET and JSON."""
    body = {"error": CONTRACT.extensions["errors"]["method-not-allowed"], "method": method}
    return [Expect(e.path, 405, body, "only GET", method) for e in CONTRACT.endpoints]


NOT_FOUND_PATHS = ["/no-such-endpoint", "/hello/extra", "/HELLO", "/sync/", "/"]
NOT_FOUND_METHODS = ["GET", "HEAD", "POST"]


def not_found_cases(method: str) -> list[Expect]:
    return [
        Expect(
            path,
            404,
            {"error": CONTRACT.extensions["errors"]["not-found"], "path": path},
            "unknown path",
            method,
        )
        for path in NOT_FOUND_PATHS
    ]


# --- refused while loaded: a refusal must not queue behind the server's pools ----------------

LOAD_MS = 1500  # each load request's wait: it outlasts the settle time and the refusals
LOAD_SETTLE_S = 0.5  # the load's requests are in service by then
LOADED_REFUSE_WITHIN_S = 0.5  # a refusal does no work: loaded or not, it answers at once
# One refusal of each kind; /async's ms is parsed on an event loop where there is one, so
# the 400 does not wait for a thread where /sync's would.
LOADED_REFUSALS = [
    not_found_cases("GET")[0],
    next(c for c in method_cases("POST") if c.path == "/hello"),
    next(c for c in grammar_cases(CONTRACT["async"], "ms") if c.why == "not a number"),
]


def refusal_load(info: dict[str, Any]) -> dict[str, int]:
    """The load a refusal is timed under: requests for every bounded pool that waits without
    holding its worker (/executor, and /sync where `def` handlers run in a pool of their own,
    not where they hold the event loops as /blocking does),
    filled to /info's capacity, plus unbounded waits; or, where every request holds a request
    slot (capacity of /hello bounded: WSGI), all slots but one. One slot and no other pool:
    nothing to load, a refusal waits for the request in service (CONTRACT.md)."""
    capacity, workers = info["capacity"], info["workers"]
    if capacity["hello"] is not None:
        spare = capacity["hello"] - 1
        return {"sync": spare} if spare else {}
    load = {"async": CONTRACT.extensions["concurrency-probe-when-unbounded"]}
    for name in ("executor", "sync"):  # a pool no larger than the workers holds each worker
        if capacity[name] is not None and capacity[name] > workers:
            load[name] = capacity[name]
    if capacity["sync"] == capacity["blocking"]:
        # /sync holds what /blocking holds: the event loops (WebFlux's, one per CPU or more),
        # which answer the refusals too; no pool of its own to fill
        load.pop("sync", None)
    return load


def loaded_refusal_problem(base: str, info: dict[str, Any]) -> str | None:
    """Why a 404, a 405 or a 400 sent while refusal_load(info) is in service does not
    answer the contract's way within LOADED_REFUSE_WITHIN_S, or None. Every load request must
    still be in service when the last refusal is answered, or the check proved nothing."""
    load = [f"/{name}?ms={LOAD_MS}" for name, k in refusal_load(info).items() for _ in range(k)]
    ends: list[float] = []
    failed: list[str] = []

    def one(path: str) -> None:
        try:
            reply = request(base, path, timeout=4 * LOAD_MS / 1000)
            if reply.status != 200:
                failed.append(f"{path}: {reply.status}")
        except OSError as exc:
            failed.append(f"{path}: {exc!r}")
        ends.append(time.perf_counter())

    threads = [threading.Thread(target=one, args=(path,), daemon=True) for path in load]
    for t in threads:
        t.start()
    time.sleep(LOAD_SETTLE_S if load else 0)
    found = []
    for expect in LOADED_REFUSALS:
        try:
            reply = request(base, expect.path, method=expect.method, timeout=LOAD_MS / 1000)
        except TimeoutError:
            found.append(f"{expect.method} {expect.path}: no answer within {LOAD_MS / 1000}s")
            continue
        slow = reply.seconds > LOADED_REFUSE_WITHIN_S
        problem = reply_problem(reply, expect) or (
            slow and f"{expect.method} {expect.path} ({expect.why}): {reply.seconds:.2f}s"
        )
        if problem:
            found.append(problem)
    answered = time.perf_counter()
    for t in threads:
        t.join(4 * LOAD_MS / 1000)
    if failed:
        return f"the load failed: {failed[0]} ({len(failed)} of {len(load)})"
    if found:
        loaded = ", ".join(f"{k} x /{n}" for n, k in refusal_load(info).items())
        return (
            f"under load ({loaded or 'none'}, {LOAD_MS} ms each) refusals must answer within "
            f"{LOADED_REFUSE_WITHIN_S}s: " + "; ".join(found)
        )
    if ends and min(ends) < answered:
        return "the load ended before the refusals were answered: nothing was proved"
    return None


# Every table above, whole: what the bites check the honest kit and the liar with.
TABLES = {
    "grammar": [c for e, p in PARAM_CASES for c in grammar_cases(e, p)],
    "repeats": [c for e in WITH_PARAMS for c in repeat_cases(e)],
    "cap": [c for e in CONTRACT.endpoints if e.max_service_ms for c in cap_cases(e)],
    "methods": [c for m in METHODS for c in method_cases(m)],
    "not-found": [c for m in NOT_FOUND_METHODS for c in not_found_cases(m)],
}


# --- schemathesis: the contract file's schema, generated values kept small -------------------

SCHEMA = schemathesis.openapi.from_path(OPENAPI)
SCHEMA.config.generation.update(
    modes=["positive", "negative"], max_examples=3, deterministic=True, no_shrink=True
)
SCHEMA.config.update(request_timeout=10)
# The coverage phase's unexpected methods, but those METHODS (the strict table, on every
# profile, its body and Allow header included) already send: 80 of 501 requests a target.
SCHEMA.config.phases.coverage.unexpected_methods -= {m.lower() for m in METHODS}
# How every schemathesis test runs (@SCHEMA.parametrize(), then @SETTINGS): the explicit
# examples, then generated cases, the same ones every time, with no deadline and no health
# checks.
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)

# Generated valid values are capped so that no request waits long: the contract's bounds
# allow 10 s waits (/db's pg_sleep included), 20 M iterations and 500 selects (/db-rows's n),
# which the hand-written tables cover instead. /db-rows's seed costs nothing: left as generated.
QUICK = {"ms": 5, "n": 3}
QUICK_CPU = {"n": 50_000}
GRAMMAR = re.compile(CONTRACT.integer_pattern)


def quick(case: Any) -> None:
    """Replace big valid values with small ones; invalid values are left as generated. A
    missing ms would wait the default (100 ms, n times in a sequence): it gets a small one."""
    endpoint = next(e for e in CONTRACT.endpoints if e.path == case.path)
    caps = QUICK_CPU if endpoint.kind == "cpu" else QUICK
    if endpoint.param("ms") and "ms" not in (case.query or {}):
        case.query = {**(case.query or {}), "ms": QUICK["ms"]}
    for name, value in list((case.query or {}).items()):
        p, cap = endpoint.param(name), caps.get(name)
        if p is None or cap is None or isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and GRAMMAR.fullmatch(value)):
            number = int(value)
            if p.minimum <= number <= p.maximum and number > cap:
                case.query[name] = type(value)(max(p.minimum, number % (cap + 1)))


DB_KIND = "db"


def call(case: Any, base_url: str) -> None:
    """One schemathesis case, values kept small (quick), its answer validated against the
    contract. The database endpoints' 503 is in the contract, but a server given DATABASE_URL
    must not answer with it: a bad parameter is a 400 first, a good one is served."""
    quick(case)
    response = case.call_and_validate(base_url=base_url)
    endpoint = next(e for e in CONTRACT.endpoints if e.path == case.path)
    if endpoint.kind == DB_KIND:
        assert response.status_code != 503, (
            f"{case.path}?{case.query}: 503 {response.text[:200]} with DATABASE_URL set"
        )
