"""Shared fixtures: the contract, the upstream service, the database, and every discovered
target x profile, each started once for the whole session (`served`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.targets import CASE_IDS, CASES, NextServer, Served, start_served
from harness.timed import CHECKS, Timed, check_all

from lab.contract import Contract, load
from lab.proc import server
from lab.proc.database import Database
from lab.proc.probe import get
from lab.targets import Target

# Every test has one kind: its module's `pytestmark`, or a mark on the test itself (closest
# wins), and lives in that kind's folder. `pytest --kind unit|conformance|e2e` runs one kind
# (just test-unit, ...). Shared helpers are modules of tests/harness/, never test modules.
KINDS = {
    "unit": "no server, no k6: functions, files, the report from a fixture run",
    "conformance": "the real targets, each started once, against the contract",
    "e2e": "the runner, k6 and real servers end to end, faults included",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--kind", choices=sorted(KINDS), help="run the tests of one kind only")


# A check of what the application answers, the same whichever server runs it: run against
# each target's default profile only (the strict tables, capacities, CPU and process checks,
# shutdown: every profile). Schemathesis and single-request timings cost 5 s a profile.
DEFAULT_PROFILE_ONLY = "default_profile_only"


# The session's temporary files (every server's log, the lab runs' own, their run lock) in a
# folder of its own, set before any test module reads the temporary folder: a session left a
# thousand server logs in /tmp for good. Removed when every test passed; a failure's is kept
# (a failing check names its server's log there).
TEMP = pytest.StashKey[Path]()
FAILED = pytest.StashKey[bool]()  # whether the session had a failure (its folder is kept)


def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="lab-tests-"))
    folder.chmod(0o711)  # PostgreSQL, run as nobody under root, reaches its folder through it
    config.stash[TEMP] = folder
    tempfile.tempdir = str(folder)
    os.environ["TMPDIR"] = str(folder)  # the processes the tests start: lab runs, servers
    for kind, what in KINDS.items():
        config.addinivalue_line("markers", f"{kind}: {what}")
    config.addinivalue_line(
        "markers",
        f"{DEFAULT_PROFILE_ONLY}: the application's answers: each target's default profile",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(TEMP, None)
    if folder is None:
        return
    if config.stash.get(FAILED, False):
        print(f"\nthis session's server logs and temporary files: {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[FAILED] = exitstatus not in (0, pytest.ExitCode.NO_TESTS_COLLECTED)


def on_other_profile(item: pytest.Item) -> bool:
    """A default_profile_only test of a `served` case that is not its target's default."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("served")
    if not case or item.get_closest_marker(DEFAULT_PROFILE_ONLY) is None:
        return False
    target, profile = case
    return bool(profile != target.default_profile)


def kind_of(item: pytest.Item) -> str | None:
    """The closest kind mark: a test's own mark beats its module's."""
    for mark in item.iter_markers():
        if mark.name in KINDS:
            return mark.name
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unkinded = sorted({item.path.name for item in items if kind_of(item) is None})
    if unkinded:
        raise pytest.UsageError(
            f"tests without a kind: {', '.join(unkinded)}; add "
            f"`pytestmark = pytest.mark.unit` (or {', '.join(k for k in KINDS if k != 'unit')})"
        )
    # A test lives in the folder of its kind (tests/unit, tests/conformance, tests/e2e).
    misplaced = sorted(
        {
            f"{item.nodeid} ({kind_of(item)})"
            for item in items
            if item.path.parent.name != kind_of(item)
        }
    )
    if misplaced:
        raise pytest.UsageError(f"tests outside their kind's folder: {', '.join(misplaced)}")
    wanted = config.getoption("--kind")
    chosen = [i for i in items if (not wanted or kind_of(i) == wanted) and not on_other_profile(i)]
    if len(chosen) < len(items):
        kept = {id(i) for i in chosen}
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
        items[:] = chosen


@pytest.fixture(scope="session")
def contract() -> Contract:
    return load()


@pytest.fixture(scope="session")
def upstream() -> Iterator[server.ServerProcess]:
    """The Go upstream service, shared by every target in the session."""
    proc = server.upstream_server().start()
    yield proc
    report = proc.stop()
    assert report.clean, f"upstream left {report.leftover}"


@pytest.fixture(scope="session")
def database() -> Iterator[Database]:
    """One embedded PostgreSQL (a fresh world table) for the whole session, started on first
    use: every served target's DATABASE_URL. Tests that change a row put it back at once."""
    db = Database().start()
    yield db
    report = db.stop()
    assert report.clean, f"postgres left {report.leftover} (port free: {report.port_free})"


@pytest.fixture(scope="session")
def next_server(upstream: server.ServerProcess, database: Database) -> Iterator[NextServer]:
    """Starts `served`'s servers, each case's while the case before it ends (NEXT_SERVER_AT)."""

    def start(target: Target, profile: str) -> server.ServerProcess:
        return start_served(target, profile, upstream.url, database.url)

    starter = NextServer(start)
    yield starter
    starter.stop_all()


@pytest.fixture(scope="session", params=CASES, ids=CASE_IDS)
def served(request: pytest.FixtureRequest, next_server: NextServer) -> Iterator[Served]:
    """One server per target x profile for the whole session (harness.targets.start_served):
    pytest runs every test of one case before it starts the next."""
    target, profile = request.param
    proc = next_server.take(target, profile)
    info = get(proc.url, "/info").body
    yield Served(target, profile, proc, info)
    report = proc.stop()
    assert report.clean, (
        f"SIGTERM left {report.leftover} (port free: {report.port_free}); log {proc.log_path}"
    )
    assert report.seconds < server.STOP_GRACE_S, f"log {proc.log_path}"


# The module whose tests check a case's answers, not timings (its loaded refusal is timed
# with the other claims, harness/timed.py): when a case's first test of it runs, the next
# case's server starts, so that its start overlaps them rather than adding to the run.
NEXT_SERVER_AT = "test_strict_contract.py"
CASE_ORDER = pytest.StashKey[list[tuple[Target, str]]]()  # the served cases in the run's order


def served_case(item: pytest.Item) -> tuple[Target, str] | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("served") if callspec else None


def pytest_runtest_call(item: pytest.Item) -> None:
    case = served_case(item)
    starter = getattr(item, "funcargs", {}).get("next_server")
    if case is None or item.path.name != NEXT_SERVER_AT or not isinstance(starter, NextServer):
        return
    upcoming = following_case(item.session, case)
    if upcoming is not None:
        starter.start(*upcoming)


def following_case(session: pytest.Session, case: tuple[Target, str]) -> tuple[Target, str] | None:
    """The case whose tests come after `case`'s in the session's order, if any."""
    order = session.stash.setdefault(CASE_ORDER, [])
    if not order:
        for item in session.items:
            found = served_case(item)
            if found is not None and (not order or order[-1] != found):
                order.append(found)
    at = order.index(case)
    return order[at + 1] if at + 1 < len(order) else None


@pytest.fixture(scope="session")
def timed(
    request: pytest.FixtureRequest, upstream: server.ServerProcess, database: Database
) -> Timed:
    """The claims that mostly wait and the stop under load, of every selected case, checked
    several cases at a time on servers of their own (harness/timed.py); each test reads its
    case's result. A case is a test's `served`, or its `target` and `profile`."""
    wanted: dict[tuple[str, str], tuple[Any, str, set[str]]] = {}
    for item in request.session.items:
        check = CHECKS.get(getattr(item, "originalname", ""))
        params = check and getattr(item, "callspec", None) and item.callspec.params
        case = params and (params.get("served") or (params["target"], params["profile"]))
        if case:
            target, profile = case
            wanted.setdefault((target.name, profile), (target, profile, set()))[2].add(check)
    return check_all(list(wanted.values()), upstream.url, database)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing check against a served target names the server's log (issue 11)."""
    report = yield
    served = getattr(item, "funcargs", {}).get("served")
    if report.failed and isinstance(served, Served):
        where = f"server log: {served.proc.log_path}"
        if hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection("server log", where)
        else:
            report.sections.append(("server log", where))
        report.user_properties.append(("server_log", str(served.proc.log_path)))
    return report
