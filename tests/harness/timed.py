"""The timed claims that mostly wait, checked for every selected case at once: the waiting
capacities (test_conformance.py), /db's and /db-blocking's claims counted at the database
(test_db_claims.py), the refusals under load (test_strict_contract.py), and last the stop
under load as the runner stops a server (test_shutdown.py: SIGTERM to the top process, its
database pools open after the /db claims). Each case gets a server of its own, started as
`served` is (WORKERS=1, the session's database), and PROFILES_AT_ONCE cases are checked at a
time, each stopped beside the next ones' checks (checked_then_stopped, which test_shutdown.py
uses too): their probes sleep far more than they work. Each test then reads its own result."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from harness import strict
from harness.claims import capacity_problems, db_claim_problem, stop_under_load_problem
from harness.support import get
from harness.targets import start_served
from lab.contract import load
from lab.proc import server
from lab.proc.database import Database
from lab.targets import Target

CONTRACT = load()
WAITING = [e for e in CONTRACT.bench_endpoints() if e.kind in ("sleep", "upstream")]
DB_TIMED = [CONTRACT["db"], CONTRACT["db-blocking"]]
MAX_PROBE = 100  # requests in one batch on a 2-CPU test machine
# With the stops beside the checks, 31 cases take 85 s three at a time (116 s with the stops in
# the checks' slots). Four at a time took 70-73 s, but in a fresh-clone CI run jdkhttp's
# virtual threads, cold beside another JVM's start, took 0.78 and 0.63 s for a 0.4-s round of
# /upstream-seq (more than half a round late, twice); six at once, a cold JVM beside five
# others missed its /db rounds twice. So four at once, one JVM at a time, the JVMs spread
# through the order (`heavy`): 32 cases in 65 s where three at once took 80 s.
PROFILES_AT_ONCE = 4
# Servers stopping at once, beside those checks: each waits out its graceful timeout.
STOPS_AT_ONCE = 3
REFUSAL = "refusal"  # the result's key of the loaded-refusal check
STOP = "stop-top"  # the result's key of the stop under load
# The tests whose results are timed here, and what each needs.
CHECKS = {
    "test_capacity_claim": "capacity",
    "test_db_claim": "db",
    "test_refused_at_once_while_loaded": REFUSAL,
    "test_stop_under_load": STOP,
}
Problems = dict[str, str | None]  # an endpoint's name (or REFUSAL) -> why it failed, or None
Timed = dict[tuple[str, str], Problems]  # (target, profile) -> its problems
C = TypeVar("C")  # a case, as its batch names it
P = TypeVar("P")  # what its check hands to its stop: its server


def is_jvm(target: Target) -> bool:
    """A target whose start is heavy: a JVM takes both CPUs for seconds as it starts."""
    return target.language == "java"


def checkable(capacity: int | None) -> bool:
    """Whether a claim can be timed: K = capacity + 1 requests at most MAX_PROBE."""
    return capacity is None or capacity + 1 <= MAX_PROBE


def case_checked(
    target: Target, profile: str, upstream_url: str, db: Database, checks: set[str]
) -> tuple[server.ServerProcess, Problems]:
    """The case's server, its claims checked (but its stop)."""
    proc = start_served(target, profile, upstream_url, db.url)
    found: Problems = {}
    try:
        info = get(proc.url, "/info").body
        capacity = info["capacity"]
        if "capacity" in checks:
            claimed = [(e, capacity[e.name]) for e in WAITING if checkable(capacity[e.name])]
            found |= capacity_problems(proc.url, claimed)
        if "db" in checks:
            for e in DB_TIMED:
                if checkable(capacity[e.name]):
                    found[e.name] = db_claim_problem(proc, target.name, db, e, info)
        if REFUSAL in checks and strict.refusal_load(info):
            problem = strict.loaded_refusal_problem(proc.url, info)
            if problem:  # one retry: a busy machine can delay one request
                problem = strict.loaded_refusal_problem(proc.url, info)
            found[REFUSAL] = problem
    except Exception as exc:  # every check of the case says so; the server is stopped next
        names = [e.name for e in WAITING + DB_TIMED] + [REFUSAL]
        found = dict.fromkeys(names, f"{type(exc).__name__}: {exc}")
    return proc, found


def stopped_under_load(
    proc: server.ServerProcess, group: bool, restart: Callable[[], server.ServerProcess]
) -> str | None:
    """stop_under_load_problem, checked once more on a fresh server (`restart`) when it misses:
    on a slow host a clean stop can run past the 5 s once (spring-mvc's JVM, 14 s to start in
    a fresh-clone CI run, exited after its graceful 3 s plus 2 more); a server that ignores
    SIGTERM or leaves a process behind misses twice. Both servers are stopped either way."""
    problem = stop_under_load_problem(proc, group=group)
    if problem is None:
        return None
    try:
        again = restart()
    except Exception as exc:  # the first miss stands, and says why it was not checked again
        return f"{problem}; a fresh server to check again did not start: {exc}"
    second = stop_under_load_problem(again, group=group)
    return None if second is None else f"{problem}; again: {second} (log {again.log_path})"


def case_stopped(
    proc: server.ServerProcess,
    found: Problems,
    checks: set[str],
    restart: Callable[[], server.ServerProcess],
) -> Problems:
    """Stops the case's server: under load where STOP is checked (once more on a fresh one,
    `restart`, if it misses: its database pools not yet open), else plainly."""
    if STOP in checks:  # it names what SIGTERM left
        found[STOP] = stopped_under_load(proc, False, restart)
    else:
        report = proc.stop()
        if not report.clean:
            found = {k: f"{p or ''}; SIGTERM left {report.leftover}" for k, p in found.items()}
    return {k: p and f"{p} (log {proc.log_path})" for k, p in found.items()}


def spread(cases: list[C], heavy: Callable[[C], bool], apart: int) -> list[C]:
    """The cases in their order but the heavy ones, each placed `apart` cases after the
    last (the light ones fill the gaps; heavy ones left over come last)."""
    light = [c for c in cases if not heavy(c)]
    weighty = [c for c in cases if heavy(c)]
    between = max(1, apart - 1)
    order: list[C] = []
    while light or weighty:
        if weighty:
            order.append(weighty.pop(0))
        order += light[:between]
        del light[:between]
    return order


def checked_then_stopped(
    cases: Iterable[C],
    check: Callable[[C], tuple[P, Problems]],
    stop: Callable[[C, P, Problems], Problems],
    at_once: int = PROFILES_AT_ONCE,
    heavy: Callable[[C], bool] = lambda case: False,
) -> list[Problems]:
    """Each case checked (its server started and its claims timed), `at_once` cases at a
    time, then stopped beside the next cases' checks: a stop under load is the server's
    graceful timeout (3-4 s of waiting, a third of a case), not CPU. A `heavy` case (a JVM:
    its start takes both CPUs for seconds) is checked beside no other heavy one, and the
    heavy ones are spread through the order so that none waits for another. A check that
    raises still has its server stopped: `check` catches what its claims raise. The results
    come in the cases' order."""
    given = list(cases)
    order = spread(list(range(len(given))), lambda at: heavy(given[at]), at_once)
    one_heavy = threading.Lock()
    with ThreadPoolExecutor(at_once) as checks, ThreadPoolExecutor(STOPS_AT_ONCE) as stops:

        def run(at: int) -> Future[Problems]:
            case = given[at]
            with one_heavy if heavy(case) else contextlib.nullcontext():
                proc, found = check(case)
            return stops.submit(stop, case, proc, found)

        done = dict(zip(order, checks.map(run, order), strict=True))
        return [done[at].result() for at in range(len(given))]


def check_all(cases: list[tuple[Target, str, set[str]]], upstream_url: str, db: Database) -> Timed:
    """Every case's problems."""

    def check(case: tuple[Target, str, set[str]]) -> tuple[server.ServerProcess, Problems]:
        target, profile, checks = case
        return case_checked(target, profile, upstream_url, db, checks)

    def stop(
        case: tuple[Target, str, set[str]], proc: server.ServerProcess, found: Problems
    ) -> Problems:
        target, profile, checks = case
        return case_stopped(
            proc, found, checks, lambda: start_served(target, profile, upstream_url, db.url)
        )

    problems = checked_then_stopped(cases, check, stop, heavy=lambda case: is_jvm(case[0]))
    return {(t.name, p): found for (t, p, _), found in zip(cases, problems, strict=True)}
