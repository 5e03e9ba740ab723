"""The contract's work: 32-bit FNV-1a CPU work, and a blocking wait that a stopping worker can
cut short.

A thread blocked in time.sleep cannot be stopped, and Python joins executor and pool threads
at exit: one /sync?ms=10000 in flight would hold the whole process for up to 10 s after its
server has given up on it. `block` holds its thread exactly like time.sleep (the semantics the
contract asks for), but `release_blocked()`, called when the worker stops serving, wakes every
blocked thread with WorkerStopping, so the process can exit within its graceful timeout."""

from __future__ import annotations

import threading

FNV_OFFSET = 2166136261
FNV_PRIME = 16777619
MASK32 = 0xFFFFFFFF

_stopping = threading.Event()


class WorkerStopping(RuntimeError):
    """The worker stopped while this request was still waiting; the request is cut."""


def fnv1a(n: int) -> int:
    x = FNV_OFFSET
    for i in range(n):
        x = ((x ^ (i & 0xFF)) * FNV_PRIME) & MASK32
    return x


def block(seconds: float) -> None:
    """Block the calling thread for `seconds`, like time.sleep, unless the worker stops."""
    if _stopping.wait(seconds):
        raise WorkerStopping("the worker is stopping")


def release_blocked() -> None:
    """Wake every thread in `block` (and every later call) with WorkerStopping."""
    _stopping.set()
