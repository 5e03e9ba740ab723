"""The CPUs' speed, measured: a reference loop (FNV-1a, as /cpu computes) pinned on each CPU,
every CPU at once (as under a load), timed in chunks of about lab.stability.CHUNK_S. One
process per CPU, started through lab.proc.children (it dies with the runner) and bounded by
its own duration; what the chunks say is lab.stability's to judge."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

from lab.proc import children
from lab.stability import CHUNK_S, Chunk

# Run by `python -S -c`: no site, no lab import, so it starts in ~20 ms. argv: cpu, the
# shared start (time.monotonic(): CLOCK_MONOTONIC, one clock for every process), seconds,
# chunk seconds. Prints [[end, seconds, steps], ...], end relative to the shared start.
LOOP = r"""
import json, os, sys, time
cpu, start = int(sys.argv[1]), float(sys.argv[2])
seconds, chunk = float(sys.argv[3]), float(sys.argv[4])
os.sched_setaffinity(0, {cpu})
def spin(k):
    h = 0xcbf29ce484222325
    for i in range(k):
        h = ((h ^ (i & 255)) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
t = time.monotonic(); spin(20000); k = max(1000, int(chunk / ((time.monotonic() - t) / 20000)))
while time.monotonic() < start:
    time.sleep(0.0005)
out, last = [], time.monotonic()
while last - start < seconds:
    spin(k)
    now = time.monotonic()
    out.append([round(now - start, 6), round(now - last, 7), k])
    last = now
print(json.dumps(out))
"""
START_DELAY_S = 0.2  # every process pinned and sized before the shared start
MARGIN_S = 5.0  # beyond start + seconds, a loop that has not printed is given up on


class SpeedError(RuntimeError):
    """The loop could not be measured (the message says why)."""


def measure(cpus: list[int], seconds: float) -> list[Chunk]:
    """Every CPU in `cpus` busy with the reference loop at once for `seconds`."""
    start = time.monotonic() + START_DELAY_S
    procs: list[tuple[int, subprocess.Popen]] = []
    try:
        for cpu in cpus:
            command = [sys.executable, "-S", "-c", LOOP, str(cpu), f"{start:.6f}"]
            command += [f"{seconds:g}", f"{CHUNK_S:g}"]
            proc = children.spawn(
                command,
                f"cpuspeed-{cpu}",
                dict(os.environ),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            procs.append((cpu, proc))
        chunks: list[Chunk] = []
        deadline = start + seconds + MARGIN_S
        for cpu, proc in procs:
            code = children.wait(proc, max(0.0, deadline - time.monotonic()))
            if code is None:
                raise SpeedError(f"the speed check on CPU {cpu} did not end in time")
            out, err = proc.communicate()
            if code != 0:
                raise SpeedError(f"the speed check on CPU {cpu} failed: {err.decode()[-200:]}")
            for end, took, steps in json.loads(out or b"[]"):
                chunks.append(Chunk(cpu, float(end), float(took), int(steps)))
        return chunks
    finally:
        for cpu, proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                children.wait(proc, 1.0)
            children.forget(proc, f"cpuspeed-{cpu}")
