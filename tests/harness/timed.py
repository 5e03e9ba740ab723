"""The timed claims that mostly wait, checked for every selected case at once: the waiting
capacities (test_conformance.py), /db's and /db-blocking's claims counted at the database
(test_db_claims.py), the refusals under load (test_strict_contract.py), and last the stop
under load as the runner stops a server (test_shutdown.py: SIGTERM to the top process, its
database pools open after the /db claims). Each case gets a server of its own, started as
`served` is (WORKERS=1, the session's database), and PROFILES_AT_ONCE cases are checked at a
time, as test_shutdown.py does: their probes sleep far more than they work. Each test then
reads its own result."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from harness import strict
from harness.claims import capacity_problems, db_claim_problem, stop_under_load_problem
from harness.support import get
from harness.targets import start_served
from lab.contract import load
from lab.proc.database import Database
from lab.targets import Target

CONTRACT = load()
WAITING = [e for e in CONTRACT.bench_endpoints() if e.kind in ("sleep", "upstream")]
DB_TIMED = [CONTRACT["db"], CONTRACT["db-blocking"]]
MAX_PROBE = 100  # requests in one batch on a 2-CPU test machine
# Six at once gained 46 s of 205, but a cold JVM beside five others missed its /db rounds twice.
PROFILES_AT_ONCE = 3
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


def checkable(capacity: int | None) -> bool:
    """Whether a claim can be timed: K = capacity + 1 requests at most MAX_PROBE."""
    return capacity is None or capacity + 1 <= MAX_PROBE


def case_problems(
    target: Target, profile: str, upstream_url: str, db: Database, checks: set[str]
) -> Problems:
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
    except Exception as exc:  # every check of the case says so; the server is stopped below
        names = [e.name for e in WAITING + DB_TIMED] + [REFUSAL]
        found = dict.fromkeys(names, f"{type(exc).__name__}: {exc}")
    finally:
        if STOP in checks:  # stops it, whatever happened; it names what SIGTERM left
            found[STOP] = stop_under_load_problem(proc, group=False)
        else:
            report = proc.stop()
            if not report.clean:
                found = {k: f"{p or ''}; SIGTERM left {report.leftover}" for k, p in found.items()}
    return {k: p and f"{p} (log {proc.log_path})" for k, p in found.items()}


def check_all(cases: list[tuple[Target, str, set[str]]], upstream_url: str, db: Database) -> Timed:
    """Every case's problems, PROFILES_AT_ONCE cases at a time."""

    def run(case: tuple[Target, str, set[str]]) -> tuple[tuple[str, str], Problems]:
        target, profile, checks = case
        return (target.name, profile), case_problems(target, profile, upstream_url, db, checks)

    with ThreadPoolExecutor(PROFILES_AT_ONCE) as pool:
        return dict(pool.map(run, cases))
