"""Every target x profile with WORKERS=2 and no database (DATABASE_URL empty), stopped under
load:

- /info's workers are the processes that answer, and each capacity follows CONTRACT.md's
  formula with W = 2 (worker-bound claims scale, unbounded ones stay unbounded);
- /db answers 503 naming the database, at once, and the server serves on;
- SIGTERM to the whole process group (what Ctrl-C of `just serve` does) with a 10 s /sync in
  flight: every process exits within 5 s and leaves no port behind.

The stop as the runner does it (SIGTERM to the top process, the database pools open) is the
last of the timed claims (harness/timed.py), on their WORKERS=1 server: one server a case here,
not a second one. The checks mostly wait, so several cases are checked at once and stopped
beside the next ones' checks (harness.timed.checked_then_stopped; the slowest stop measured
4.4 s): the selected cases are checked in one module fixture and each test reads its case's
result."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from harness.claims import process_problem
from harness.support import get
from harness.targets import CASE_IDS, CASES, start_target
from harness.timed import STOP, Timed, checked_then_stopped, is_jvm, stopped_under_load

from lab import capacities
from lab.contract import load
from lab.proc import server
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

DB_ERROR = load().error("database", reason="")  # "database: ", the start of every reason
Problems = dict[str, str | None]  # check -> why it failed, or None


def workers_problem(proc: server.ServerProcess, target: Target, profile: str) -> str | None:
    info = get(proc.url, "/info").body
    # 12 rounds, not 6: flask/granian's second worker answered none of 6 rounds in both tries
    # of a fresh-clone CI run (one process wins the accepts under load); one more try for a
    # busy 2-CPU machine. A server that runs fewer processes than it claims never shows them.
    problem = process_problem(proc, info, rounds=12)
    if problem:
        problem = process_problem(proc, info, rounds=12)
    if problem:
        return problem
    row = capacities.table()[(target.name, profile)]
    wrong = {
        endpoint: (formula, capacities.evaluate(formula, info), info["capacity"].get(endpoint))
        for endpoint, formula in row.items()
        if capacities.evaluate(formula, info) != info["capacity"].get(endpoint)
    }
    if wrong:
        return f"with {info['workers']} workers (endpoint: formula, value, /info): {wrong}"
    return None


def no_database_problem(proc: server.ServerProcess) -> str | None:
    reply = get(proc.url, "/db?ms=10", timeout=5)
    if reply.status != 503 or not str(reply.body.get("error")).startswith(DB_ERROR):
        return f"/db without DATABASE_URL: {reply.status} {reply.body}, want 503 {DB_ERROR!r}..."
    if reply.seconds >= 2.0:
        return f"/db without DATABASE_URL took {reply.seconds:.2f}s to fail"
    if (hello := get(proc.url, "/hello")).status != 200:
        return f"after /db's 503, /hello answered {hello.status}"
    return None


def started_two(target: Target, profile: str, upstream_url: str) -> server.ServerProcess:
    """The case's server as this module checks it: two workers, no database."""
    return start_target(target, profile, upstream_url, WORKERS="2", DATABASE_URL="")


def case_checked(
    target: Target, profile: str, upstream_url: str
) -> tuple[server.ServerProcess, Problems]:
    proc = started_two(target, profile, upstream_url)
    checks: dict[str, Callable[[], str | None]] = {
        "workers": lambda: workers_problem(proc, target, profile),
        "no-database": lambda: no_database_problem(proc),
    }
    found: Problems = {}
    for name, problem in checks.items():
        try:
            found[name] = problem()
        except Exception as exc:  # the server is stopped all the same
            found[name] = f"{type(exc).__name__}: {exc}"
    return proc, found


def case_stopped(
    proc: server.ServerProcess, found: Problems, restart: Callable[[], server.ServerProcess]
) -> Problems:
    found["stop-group"] = stopped_under_load(proc, True, restart)  # stops it, whatever happened
    return {name: p and f"{p} (log {proc.log_path})" for name, p in found.items()}


CHECKED = ("test_workers_two", "test_no_database_is_503_at_once", "test_stop_under_load")


@pytest.fixture(scope="module")
def checked(
    request: pytest.FixtureRequest, upstream: server.ServerProcess
) -> dict[tuple[str, str], Problems]:
    """The problems of every selected case, checked as the timed claims are."""
    wanted = list(
        {
            (item.callspec.params["target"].name, item.callspec.params["profile"]): (
                item.callspec.params["target"],
                item.callspec.params["profile"],
            )
            for item in request.session.items
            if getattr(item, "originalname", "") in CHECKED
        }.values()
    )

    problems = checked_then_stopped(
        wanted,
        lambda case: case_checked(*case, upstream.url),
        lambda case, proc, found: case_stopped(
            proc, found, lambda: started_two(*case, upstream.url)
        ),
        heavy=lambda case: is_jvm(case[0]),
    )  # as many at once as the timed claims (three and four both took 41-44 s here)
    return {(t.name, p): found for (t, p), found in zip(wanted, problems, strict=True)}


@pytest.mark.parametrize(("target", "profile"), CASES, ids=CASE_IDS)
def test_workers_two(
    target: Target, profile: str, checked: dict[tuple[str, str], Problems]
) -> None:
    problem = checked[(target.name, profile)]["workers"]
    assert problem is None, f"WORKERS=2: {problem}"


@pytest.mark.parametrize(("target", "profile"), CASES, ids=CASE_IDS)
def test_no_database_is_503_at_once(
    target: Target, profile: str, checked: dict[tuple[str, str], Problems]
) -> None:
    problem = checked[(target.name, profile)]["no-database"]
    assert problem is None, problem


@pytest.mark.parametrize(("target", "profile"), CASES, ids=CASE_IDS)
def test_stop_under_load(
    target: Target, profile: str, checked: dict[tuple[str, str], Problems], timed: Timed
) -> None:
    case = (target.name, profile)
    problems = [p for p in (timed[case][STOP], checked[case]["stop-group"]) if p]
    assert not problems, "\n".join(problems)
