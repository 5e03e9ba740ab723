"""Stop under load: every target x profile, with a 10 s /sync in flight, exits within 5 s of
SIGTERM — sent to the top process (what the runner does) and, separately, to the whole
process group (what Ctrl-C of `just serve` does) — and leaves no process and no port behind.
Each way runs on its own server (WORKERS=2, so workers and pools are in the tree). The checks
mostly wait, so two profiles run at once (four servers): the selected cases are stopped in one
module fixture and each test reads its case's result."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from harness.claims import stop_under_load_problem
from harness.targets import CASE_IDS, CASES, start_target

from lab.proc import server
from lab.proc.database import Database
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

PROFILES_AT_ONCE = 2


def stop_problems(target: Target, profile: str, upstream_url: str, db_url: str) -> list[str]:
    def one(group: bool) -> str | None:
        # with the database: each worker's pools are open when it stops, as in a run
        proc = start_target(target, profile, upstream_url, WORKERS="2", DATABASE_URL=db_url)
        problem = stop_under_load_problem(proc, group=group)
        return problem and f"{problem} (log {proc.log_path})"

    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(one, [False, True]))
    return [p for p in found if p]


@pytest.fixture(scope="module")
def stopped(
    request: pytest.FixtureRequest, upstream: server.ServerProcess, database: Database
) -> dict[tuple[str, str], list[str]]:
    """The problems of every selected case, two profiles at a time."""
    wanted = [
        (item.callspec.params["target"], item.callspec.params["profile"])
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_stop_under_load"
    ]

    def run(case: tuple[Target, str]) -> tuple[tuple[str, str], list[str]]:
        target, profile = case
        return (target.name, profile), stop_problems(target, profile, upstream.url, database.url)

    with ThreadPoolExecutor(PROFILES_AT_ONCE) as pool:
        return dict(pool.map(run, wanted))


@pytest.mark.parametrize(("target", "profile"), CASES, ids=CASE_IDS)
def test_stop_under_load(
    target: Target, profile: str, stopped: dict[tuple[str, str], list[str]]
) -> None:
    problems = stopped[(target.name, profile)]
    assert not problems, "\n".join(problems)
