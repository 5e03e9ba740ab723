"""The strict contract's edge cases as data, the checks that compare a server's answer with
them, and schemathesis (the schema, how its tests run); shared by test_strict_contract.py and
the bites. Every expected message comes
from the contract's x-lab.errors templates."""

from __future__ import annotations

import re
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
