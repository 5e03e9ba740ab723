"""Every target, pointed at an upstream and a database that are not there, answers its
upstream endpoints with 502/504 JSON and its database endpoints with 503 JSON naming the
database, each at once, and keeps serving everything else."""

from __future__ import annotations

import pytest
from harness.support import get
from harness.targets import TARGETS

from lab.contract import load
from lab.proc import server
from lab.targets import Target

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

CONTRACT = load()
UPSTREAM_ENDPOINTS = [e for e in CONTRACT.endpoints if e.kind == "upstream"]
DB_ENDPOINTS = [e for e in CONTRACT.endpoints if e.kind == "db"]
DB_ERROR = CONTRACT.error("database", reason="")  # "database: ", the start of every reason
FAIL_WITHIN_S = 2.0


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_unreachable_upstream_and_database(target: Target) -> None:
    nowhere = f"http://127.0.0.1:{server.free_port()}"  # nothing listens there
    no_db = f"postgresql://postgres@127.0.0.1:{server.free_port()}/postgres"
    env = {"WORKERS": "1", "DATABASE_URL": no_db}
    proc = server.target_server(target, upstream_url=nowhere, env=env).start()
    problems = []
    try:
        for endpoint in UPSTREAM_ENDPOINTS + DB_ENDPOINTS:
            reply = get(proc.url, f"{endpoint.path}?ms=10&n=5", timeout=10)
            upstream = endpoint.kind == "upstream"
            body = reply.body if isinstance(reply.body, dict) else {}
            error = body.get("error")
            if reply.status not in ((502, 504) if upstream else (503,)):
                problems.append(f"{endpoint.path}: status {reply.status}: {reply.body}")
            elif not reply.content_type.startswith("application/json") or not error:
                problems.append(f"{endpoint.path}: not a JSON error: {reply.body!r}")
            elif not upstream and not str(error).startswith(DB_ERROR):
                problems.append(f"{endpoint.path}: the error does not name the database: {error}")
            if reply.seconds >= FAIL_WITHIN_S:
                problems.append(f"{endpoint.path} took {reply.seconds:.2f}s to fail")
        for path in ("/hello", "/async?ms=10"):
            if get(proc.url, path).status != 200:
                problems.append(f"{path} is not served")
    finally:
        report = proc.stop()
    assert report.clean, report
    assert not problems, f"{problems} (log {proc.log_path})"
