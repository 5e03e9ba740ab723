"""A progress line for long runs: cell i/N, a bar, the current cell and the time left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


class Progress:
    """estimates: each cell's expected seconds, in the run's order (runner.cell_estimates)."""

    def __init__(self, estimates: list[float], out: TextIO = sys.stderr) -> None:
        self.estimates = estimates
        self.total = len(estimates)
        self.done = 0
        self.started = time.monotonic()
        self.out = out
        self.tty = out.isatty()

    def eta(self) -> float:
        """The cells left, as estimated, at the pace the run has kept against its estimates so
        far: a JVM's cells cost several times a Go target's, so the cells' mean would not do."""
        left = sum(self.estimates[self.done :])
        planned = sum(self.estimates[: self.done])
        if self.done and planned > 0:
            return (time.monotonic() - self.started) / planned * left
        return left

    def show(self, label: str, note: str = "") -> None:
        """note: a word on the run so far (the host's measured speed spread)."""
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        count = f"{self.done + 1:>{len(str(self.total))}}/{self.total}"
        line = f"[{count}] {bar} ETA {clock(self.eta())}  {note + '  ' if note else ''}{label}"
        if self.tty:
            self.out.write("\r\x1b[2K" + line[:160])
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def advance(self, result: str) -> None:
        self.done += 1
        if self.tty:
            self.out.write(f"  {result}\n")
        else:
            self.out.write(f"    -> {result}\n")
        self.out.flush()
