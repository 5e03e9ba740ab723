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
    def __init__(self, total: int, estimate_s: float, out: TextIO = sys.stderr) -> None:
        self.total = total
        self.per_cell = estimate_s / total if total else 0.0
        self.done = 0
        self.started = time.monotonic()
        self.out = out
        self.tty = out.isatty()

    def eta(self) -> float:
        left = self.total - self.done
        if self.done:
            return (time.monotonic() - self.started) / self.done * left
        return self.per_cell * left

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
