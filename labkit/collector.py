"""Python's cyclic garbage collector, timed: /info's `collector`. A collection runs in the
thread whose allocation triggered it, holding the GIL, so every request in flight waits for
it; under many requests in flight it can take a third of a worker's CPU (CONTRACT.md,
"Python's cyclic garbage collector"). A gc.callbacks timer of the collecting thread's CPU
time counts what it took, per process since the worker started (reset in a forked child, so
that a pre-forking server's workers count their own), for the runner to read around the
calibration and around the load."""

from __future__ import annotations

import gc
import os
import time
from typing import Any

_collections = [0] * len(gc.get_count())  # per generation (3 in CPython)
_seconds = 0.0
# the sum of each collection's seconds squared: how long a request that arrives at a random
# moment waits, on average, for a collection in progress is its increase over twice the wall
# time between two readings (lab.run.collector.pause_wait_ms)
_squares = 0.0
_started: float | None = None  # the thread CPU time at the current collection's start


def _timed(phase: str, info: dict[str, Any]) -> None:
    global _seconds, _squares, _started
    if phase == "start":
        _started = time.thread_time()
    elif _started is not None:  # a collection never nests in another
        took = time.thread_time() - _started
        _seconds += took
        _squares += took * took
        _started = None
        generation = int(info.get("generation", 0))
        if 0 <= generation < len(_collections):
            _collections[generation] += 1


def _reset() -> None:
    global _seconds, _squares, _started
    _collections[:] = [0] * len(_collections)
    _seconds, _squares, _started = 0.0, 0.0, None


def install() -> None:
    """Start timing this process's collections (once; a forked child starts from zero)."""
    if _timed not in gc.callbacks:
        gc.callbacks.append(_timed)
        os.register_at_fork(after_in_child=_reset)


def totals() -> dict[str, Any]:
    """/info's collector: collections per generation, their CPU seconds and the sum of their
    seconds squared so far."""
    return {
        "collections": list(_collections),
        "seconds": round(_seconds, 6),
        "seconds_squared": round(_squares, 9),
    }
