"""A per-worker process pool for /cpu-pool: made at worker start-up, pre-warmed, shut down on exit.

Pool processes are forked from the worker, so they also inherit the write end of the
pool's own pipe and would never see EOF if the worker were killed. They ask the kernel to
end them when their parent dies instead, and leave Ctrl-C to their parent.

They also inherit the worker's Python signal handlers: uvicorn's and gunicorn's SIGTERM
handlers only flag a server (the copy in the child) to stop, so a pool process that kept one
would shrug off its parent-death SIGTERM and outlive its worker. Each resets SIGTERM first."""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor

from labkit.work import fnv1a

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def start(processes: int) -> ProcessPoolExecutor:
    """A pool of `processes` processes, all started before the first request.
    Call it from the worker's main thread: the death signal follows the forking thread."""
    pool = ProcessPoolExecutor(
        max_workers=processes,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_die_with_parent,
    )
    # With fork, 3.11 starts every process on the first submit; wait for all of them.
    list(pool.map(fnv1a, [0] * processes))
    return pool


def stop(pool: ProcessPoolExecutor | None) -> None:
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
