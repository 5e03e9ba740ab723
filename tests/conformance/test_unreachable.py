"""Every target, pointed at an upstream and a database that are not there, answers its
upstream endpoints with 502/504 JSON and its database endpoints with 503 JSON naming the
database, each at once, and keeps serving everything else. The checks mostly wait for a
server's start and stop: the selected targets are checked a few at a time in one module
fixture (harness.timed.checked_then_stopped) and each test reads its target's result."""

from __future__ import annotations

import pytest
from harness.support import get
from harness.targets import TARGETS, start_target
from harness.timed import checked_then_stopped

from lab.contract import load
from lab.proc import server
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
UPSTREAM_ENDPOINTS = [e for e in CONTRACT.endpoints if e.kind == "upstream"]
DB_ENDPOINTS = [e for e in CONTRACT.endpoints if e.kind == "db"]
DB_ERROR = CONTRACT.error("database", reason="")  # "database: ", the start of every reason
FAIL_WITHIN_S = 2.0
# Starts are most of a check here (CPU): 13 targets took 15 s one at a time.
TARGETS_AT_ONCE = 3
Problems = dict[str, str | None]  # "answers" -> what was wrong, or None


def problems(proc: server.ServerProcess) -> list[str]:
    found = []
    for endpoint in UPSTREAM_ENDPOINTS + DB_ENDPOINTS:
        reply = get(proc.url, f"{endpoint.path}?ms=10&n=5", timeout=10)
        upstream = endpoint.kind == "upstream"
        body = reply.body if isinstance(reply.body, dict) else {}
        error = body.get("error")
        if reply.status not in ((502, 504) if upstream else (503,)):
            found.append(f"{endpoint.path}: status {reply.status}: {reply.body}")
        elif not reply.content_type.startswith("application/json") or not error:
            found.append(f"{endpoint.path}: not a JSON error: {reply.body!r}")
        elif not upstream and not str(error).startswith(DB_ERROR):
            found.append(f"{endpoint.path}: the error does not name the database: {error}")
        if reply.seconds >= FAIL_WITHIN_S:
            found.append(f"{endpoint.path} took {reply.seconds:.2f}s to fail")
    for path in ("/hello", "/async?ms=10"):
        if get(proc.url, path).status != 200:
            found.append(f"{path} is not served")
    return found


def checked(target: Target) -> tuple[server.ServerProcess | None, Problems]:
    nowhere = f"http://127.0.0.1:{server.free_port()}"  # nothing listens there
    no_db = f"postgresql://postgres@127.0.0.1:{server.free_port()}/postgres"
    try:  # beside other starts: a port taken between its pick and the bind is picked again
        proc = start_target(
            target, target.default_profile, nowhere, WORKERS="1", DATABASE_URL=no_db
        )
    except server.ServerError as exc:  # this target's test says so, the others run
        return None, {"answers": f"did not start: {exc}"}
    try:
        found = problems(proc)
    except Exception as exc:  # the server is stopped all the same
        found = [f"{type(exc).__name__}: {exc}"]
    return proc, {"answers": f"{found} (log {proc.log_path})" if found else None}


def stopped(proc: server.ServerProcess | None, found: Problems) -> Problems:
    report = proc.stop() if proc else None
    return {**found, "stop": None if not report or report.clean else f"SIGTERM left: {report}"}


@pytest.fixture(scope="module")
def unreachable(request: pytest.FixtureRequest) -> dict[str, Problems]:
    """Every selected target's problems."""
    wanted = list(
        {
            item.callspec.params["target"].name: item.callspec.params["target"]
            for item in request.session.items
            if getattr(item, "originalname", "") == "test_unreachable_upstream_and_database"
        }.values()
    )
    found = checked_then_stopped(
        wanted, checked, lambda _, proc, found: stopped(proc, found), TARGETS_AT_ONCE
    )
    return {t.name: problems for t, problems in zip(wanted, found, strict=True)}


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_unreachable_upstream_and_database(
    target: Target, unreachable: dict[str, Problems]
) -> None:
    found = unreachable[target.name]
    assert found["stop"] is None, found["stop"]
    assert found["answers"] is None, found["answers"]
