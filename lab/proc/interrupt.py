"""Ctrl-C, SIGTERM and SIGHUP for the runner: the first one raises KeyboardInterrupt where the
main thread is, so that a blocked socket read or sleep ends at once; never inside the
subprocess module; and never again while the run is stopping, so clean-up is not cut short.

Why not inside subprocess (issue 14's 14-minute hang): Popen.poll() and Popen.wait(timeout)
take Popen's private _waitpid_lock with acquire(False) and enter their try/finally one
bytecode later. CPython runs a Python signal handler at the first bytecode boundary after
the signal, which can be that one: a KeyboardInterrupt raised there leaves the lock held for
ever, the child is never reaped, and the next Popen.wait() without a timeout blocks on the
lock (a futex) for good. So a signal that finds the main thread inside subprocess is tried
again 1 ms later (SIGALRM), and raised at the first boundary outside it."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RETRY_S = 0.001
_SUBPROCESS = subprocess.__file__


class _State:
    def __init__(self) -> None:
        self.received: int | None = None  # the first signal, once one came
        self.raised = False  # KeyboardInterrupt was raised: the run is stopping
        self.shields = 0  # > 0: inside clean-up, signals are only noted


_state = _State()


def _in_subprocess(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == _SUBPROCESS:
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGALRM:
        if _state.received is None:
            return  # not our retry
    elif _state.received is None:
        _state.received = signum
    if _state.raised or _state.shields:
        return  # noted: the stop is under way, or clean-up runs and raises nothing
    if _in_subprocess(frame):
        # Try again in a moment (not at once: the next boundary may be in this very
        # handler); raised once the main thread has left subprocess (see the docstring).
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    _state.raised = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Install the handler for SIGINT, SIGTERM and SIGHUP (main thread only)."""
    global _state
    _state = _State()
    previous = {s: signal.signal(s, _handler) for s in (*SIGNALS, signal.SIGALRM)}
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Clean-up that must run to its end (it is bounded): signals are noted, not raised.
    Call check() afterwards to act on one."""
    _state.shields += 1
    try:
        yield
    finally:
        _state.shields -= 1


def requested() -> bool:
    return _state.received is not None


def check() -> None:
    """Raise KeyboardInterrupt if a signal came while shielded and none was raised yet."""
    if _state.received is not None and not _state.raised and not _state.shields:
        _state.raised = True
        raise KeyboardInterrupt
