"""The runner's supervisor: `python -m lab.proc.supervisor RUNNER_PID RUN_DIR`, started by
lab.proc.children.Session in a session of its own with a pipe on its stdin.

The runner writes "+PGID" for every process group it starts and "-PGID" once it has stopped
one. When the runner ends, however (kill -9 included), the kernel closes the pipe; the
supervisor then SIGKILLs the groups still registered and every process tagged with
LAB_RUNNER=RUNNER_PID (workers and pools that left no group behind), marks run.json `died`
if it still says `running` (lab.record.mark_died, the rule readers of a run apply too), and
exits. After a clean end there is nothing to do."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

from lab import record


def _tagged(runner: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            if f"LAB_RUNNER={runner}".encode() in env:
                pids.append(int(entry))
    return pids


def main(argv: list[str]) -> int:
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    runner, run_dir = argv[1], Path(argv[2])
    groups: set[int] = set()
    for raw in sys.stdin.buffer:  # ends when the runner's end of the pipe closes
        line = raw.strip().decode(errors="replace")
        with contextlib.suppress(ValueError):
            if line.startswith("+"):
                groups.add(int(line[1:]))
            elif line.startswith("-"):
                groups.discard(int(line[1:]))
    own = os.getpgid(0)
    for pgid in groups - {own}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for pid in _tagged(runner):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError, ValueError):  # no run.json (yet), or a broken one
        record.mark_died(run_dir, ended_pid=int(runner))  # the rule every reader applies too
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
