"""One benchmark run at a time per machine: two runs would share the CPUs the measurement
depends on, and each would be pinned to the same halves. An fcntl lock on one file per
machine (LAB_LOCK, default /tmp/concurrency-lab.lock, not a folder under results/: a run
with another --out shares the CPUs all the same). The file names the run that holds it, and
the kernel drops the lock when its holder dies, kill -9 included: a lock is never stale."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from lab.record import utc_now

DEFAULT = Path(tempfile.gettempdir()) / "concurrency-lab.lock"


class Busy(Exception):
    """Another run holds the machine; the message names it."""


def path() -> Path:
    return Path(os.environ.get("LAB_LOCK") or DEFAULT)


class RunLock:
    def __init__(self, fd: int, where: Path) -> None:
        self.fd = fd
        self.where = where

    def name(self, **holder: Any) -> None:
        """Say who holds the lock (read by the run it refuses)."""
        text = json.dumps({"pid": os.getpid(), "since": utc_now(), **holder})
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text.encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the lock
            self.fd = -1


def acquire() -> RunLock | None:
    """The machine's run lock, or Busy naming its holder. None (and no lock) when the lock
    file cannot be opened at all: a run is not refused for that."""
    where = path()
    try:
        fd = os.open(where, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by children
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise Busy(
            f"another run is using this machine ({holder}); two runs share the CPUs and "
            "spoil each other's numbers: wait for it, stop it, or add --allow-concurrent"
        ) from None
    return RunLock(fd, where)


def _holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        data = {}
    if not data:
        return "a run that is starting"
    run = f"run {data['run']} in {data.get('path', '?')}, " if data.get("run") else ""
    return f"{run}pid {data.get('pid', '?')}, since {data.get('since', '?')}"
