"""Every process the lab starts (servers, the upstream service, k6) goes through here, so that
none can outlive the runner, however the runner ends:

- each child gets a session (and so a process group) of its own: Ctrl-C reaches only the
  runner, which stops its children in order, and a group can be ended as a whole;
- the kernel SIGKILLs the child when the runner dies (PR_SET_PDEATHSIG, set by util-linux's
  `setpriv --pdeathsig` before it execs the command; `taskset` execs too, so it stays);
- during a run, a supervisor process (lab/proc/supervisor.py) holds the other end of a pipe:
  when the runner dies, even by kill -9, it SIGKILLs every group the runner registered and
  every process tagged with the runner's LAB_RUNNER (gunicorn and uvicorn workers, process
  pools: grandchildren that the parent-death signal does not reach);
- every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import psutil

from lab import ROOT, record
from lab.record import utc_now

# The parent-death signal follows the thread that forked: spawn from the main thread.
_SETPRIV = shutil.which("setpriv")
# By its full path: a child's environment may carry a PATH without /usr/bin.
PDEATHSIG = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []


class Session:
    """One runner's children: tagged with LAB_RUN / LAB_RUNNER, registered with the
    supervisor, recorded in the run folder's processes.log."""

    def __init__(self, run_id: str, run_dir: Path) -> None:
        self.run_id = run_id
        self.run_dir = run_dir
        self.log_path = run_dir / "processes.log"
        self.supervisor: subprocess.Popen[bytes] | None = None
        self.pipe: IO[bytes] | None = None

    def start(self) -> Session:
        self.supervisor = subprocess.Popen(
            [sys.executable, "-m", "lab.proc.supervisor", str(os.getpid()), str(self.run_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C and `timeout`'s group signal do not reach it
            cwd=ROOT,
        )
        self.pipe = self.supervisor.stdin
        return self

    def env(self) -> dict[str, str]:
        return {
            "LAB_RUN": self.run_id,
            "LAB_RUNNER": str(os.getpid()),
            "LAB_RUNNER_STARTED": repr(psutil.Process().create_time()),
        }

    def _tell(self, line: str) -> None:
        if self.pipe is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.pipe.write(line.encode() + b"\n")
            self.pipe.flush()

    def _record(self, text: str) -> None:
        stamp = utc_now()
        # a full disk must not stop a child's clean-up
        with contextlib.suppress(OSError), self.log_path.open("a") as f:
            f.write(f"{stamp} {text}\n")

    def started(self, pgid: int, name: str) -> None:
        self._tell(f"+{pgid}")
        self._record(f"start pgid={pgid} {name}")

    def stopped(self, pgid: int, name: str) -> None:
        self._tell(f"-{pgid}")
        self._record(f"stop pgid={pgid} {name}")

    def close(self) -> None:
        """The run ended normally: the supervisor sees EOF, finds nothing left, exits."""
        if self.pipe:
            with contextlib.suppress(OSError):
                self.pipe.close()
            self.pipe = None
        if self.supervisor:
            wait(self.supervisor, 5.0)
            self.supervisor = None


_session: Session | None = None


def set_session(session: Session | None) -> None:
    global _session
    _session = session


def spawn(command: list[str], name: str, env: dict[str, str], **popen: Any) -> subprocess.Popen:
    """Start a child in a session of its own that dies with us (see the module docstring)."""
    if _session:
        env = {**env, **_session.env()}
    proc = subprocess.Popen(
        [*PDEATHSIG, *command], env=env, start_new_session=True, stdin=subprocess.DEVNULL, **popen
    )
    if _session:
        _session.started(proc.pid, name)
    return proc


def forget(proc: subprocess.Popen, name: str) -> None:
    """The child's group has been stopped: the supervisor need not end it."""
    if _session:
        _session.stopped(proc.pid, name)


POLL_S = 0.02


def wait(proc: subprocess.Popen, timeout: float) -> int | None:
    """The exit code, waiting at most `timeout` s; None if it still runs. Polled from here,
    not Popen.wait(): that one can block for ever on a lock an interrupted wait left held,
    and lab.proc.interrupt defers a signal while the main thread is inside subprocess, so the
    sleeping must happen out here for Ctrl-C to end a wait at once."""
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        code = proc.poll()
        if code is not None:
            return code
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(POLL_S, left))


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def tree(pid: int) -> list[psutil.Process]:
    """The process and every process below it (none once it is gone)."""
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def running(p: psutil.Process) -> bool:
    """Not ended: a zombie has ended (its parent, or init, reaps it later)."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_ended(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The ones still running after at most `timeout` s. Not psutil.wait_procs: it counts a
    zombie as alive, and a worker orphaned by its master's exit stays a zombie until init
    reaps it (on a host whose init is slow to, a stop waited out its whole grace: 4.9 s
    for starlette/uvicorn, whose tree was gone at 3.35 s)."""
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        alive = [p for p in procs if running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(POLL_S)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with {code}"


# --- what a dead runner left --------------------------------------------------------------


def tagged(run_id: str | None = None, exclude_runner: int | None = None) -> list[psutil.Process]:
    """Live processes that carry a lab run's tag (of `run_id`, or of any run), except those of
    the runner `exclude_runner`. Only processes we may read (ours) are seen."""
    found = []
    me = os.getpid()
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            env = p.environ()
            if "LAB_RUNNER" not in env:
                continue
            if run_id is not None and env.get("LAB_RUN") != run_id:
                continue
            if exclude_runner is not None and env.get("LAB_RUNNER") == str(exclude_runner):
                continue
            if p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


def orphans(run_id: str | None = None) -> list[psutil.Process]:
    """Tagged processes whose runner is gone: no process with the runner's pid and start time
    (any command: bench, bench-all, reproduce, a test's own runner)."""
    left = []
    for p in tagged(run_id):
        with contextlib.suppress(psutil.Error, OSError, ValueError):
            env = p.environ()
            if not record.same_process(int(env["LAB_RUNNER"]), env.get("LAB_RUNNER_STARTED")):
                left.append(p)
    return left


def end(procs: list[psutil.Process], timeout: float = 2.0) -> list[int]:
    """SIGKILL these processes (and their groups); the pids that were ended."""
    pids = []
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            pgid = os.getpgid(p.pid)
            if pgid not in (os.getpgid(0),):
                kill_group(pgid)
            p.kill()
            pids.append(p.pid)
    wait_ended(procs, timeout)
    return pids
