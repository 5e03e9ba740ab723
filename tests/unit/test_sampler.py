"""The sampler's observations of a process tree: its threads at their peak."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from lab.proc.sampler import Sampler

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# A parent holding 1 + 12 threads for 1.5 s, then 1: the peak is what the sampler keeps.
THREADS = """
import threading, time
done = threading.Event()
threads = [threading.Thread(target=done.wait) for _ in range(12)]
[t.start() for t in threads]
time.sleep(1.5)
done.set()
[t.join() for t in threads]
time.sleep(1.5)
"""


def test_peak_threads_of_the_tree() -> None:
    proc = subprocess.Popen([sys.executable, "-c", THREADS])
    try:
        time.sleep(0.3)
        sampler = Sampler({"server": proc.pid}, interval=0.1).start()
        time.sleep(2.0)  # past the 12 threads' end
        usage = sampler.stop()["server"]
    finally:
        proc.kill()
        proc.wait(5)
    assert usage.threads == 13, usage
