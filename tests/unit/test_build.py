"""A target's build step (lab.proc.server.run_build) runs once per process, and never twice at
once: the conformance suite starts servers from several threads, and a JVM started while
another thread's Maven rewrote its jar could not find its main class."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lab.proc import server

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# A build that fails when another copy of it runs at the same time (its marker exists), and
# counts its runs in a file.
BUILD = """
import os, sys, time
marker, count = sys.argv[1], sys.argv[2]
fd = os.open(marker, os.O_CREAT | os.O_EXCL)
with open(count, "a") as f:
    f.write("x")
time.sleep(0.3)
os.close(fd)
os.remove(marker)
"""


def test_a_build_started_from_several_threads_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "_built", set())
    count = tmp_path / "count"
    command = (sys.executable, "-c", BUILD, str(tmp_path / "running"), str(count))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: server.run_build(command, tmp_path), range(4)))
    assert count.read_text() == "x"
    server.run_build(command, tmp_path)  # done already in this process
    assert count.read_text() == "x"


def test_a_failed_build_says_so_and_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "_built", set())
    failing = (sys.executable, "-c", "import sys; sys.exit('no compiler')")
    for _ in range(2):
        with pytest.raises(server.ServerError, match=r"build failed: .*no compiler"):
            server.run_build(failing, tmp_path)
