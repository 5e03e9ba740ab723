"""Every target, pointed at an upstream that is not there, answers its upstream endpoints
with 502/504 JSON at once and keeps serving everything else."""

from __future__ import annotations

import pytest
from harness.support import get
from harness.targets import TARGETS

from lab.contract import load
from lab.proc import server

pytestmark = pytest.mark.conformance  # the test's kind: just test-conformance

UPSTREAM_ENDPOINTS = [e for e in load().endpoints if e.kind == "upstream"]


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_unreachable_upstream(target) -> None:  # type: ignore[no-untyped-def]
    nowhere = f"http://127.0.0.1:{server.free_port()}"  # nothing listens there
    proc = server.target_server(target, upstream_url=nowhere, env={"WORKERS": "1"}).start()
    try:
        for endpoint in UPSTREAM_ENDPOINTS:
            reply = get(proc.url, f"{endpoint.path}?ms=10&n=5", timeout=10)
            assert reply.status in (502, 504), (endpoint.name, reply.status, reply.body)
            assert reply.content_type.startswith("application/json")
            assert isinstance(reply.body, dict) and reply.body.get("error"), reply.body
            assert reply.seconds < 2.0, f"{endpoint.name} took {reply.seconds:.2f}s to fail"
        assert get(proc.url, "/hello").status == 200
        assert get(proc.url, "/async?ms=10").status == 200
    finally:
        report = proc.stop()
    assert report.clean, report
