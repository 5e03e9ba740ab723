"""The upstream service's real-time priority (lab.proc.server.realtime): every thread of the
process, the ones it starts later included, or the reason it stays at the normal policy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.proc.server import UPSTREAM_PRIORITY, realtime

pytestmark = pytest.mark.unit

# a process with a second thread now, and a third one 0.5 s later
CHILD = (
    "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
    "time.sleep(0.5)\n"
    "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
    "time.sleep(5)\n"
)


def tasks(pid: int) -> list[int]:
    return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]


def test_every_thread_runs_at_the_priority_or_the_refusal_is_said() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    try:
        deadline = time.monotonic() + 5
        while len(tasks(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        said = realtime(child.pid)
        if said.startswith("normal"):  # not permitted here (no CAP_SYS_NICE)
            assert said.startswith("normal (SCHED_FIFO refused: "), said
            assert all(os.sched_getscheduler(t) == os.SCHED_OTHER for t in tasks(child.pid))
            return
        assert said == f"SCHED_FIFO {UPSTREAM_PRIORITY}"
        while len(tasks(child.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        threads = tasks(child.pid)
        assert len(threads) == 3, threads  # the one started after inherits the policy
        for tid in threads:
            assert os.sched_getscheduler(tid) == os.SCHED_FIFO, tid
            assert os.sched_getparam(tid).sched_priority == UPSTREAM_PRIORITY, tid
    finally:
        child.kill()
        child.wait(5)


def test_a_process_that_is_gone_is_said_in_words() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(5)
    said = realtime(child.pid)
    assert said.startswith("normal (SCHED_FIFO refused: ") and "No such file" in said, said
