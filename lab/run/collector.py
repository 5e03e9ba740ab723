"""The server's garbage collector as its /info times it (`collector`: Python's, labkit.collector;
V8's, node/kit/collector.js) and the share of the server's CPU it took between two readings:
around the calibration and around the load (the row's gc_calibration_pct and gc_pct). An
observation beside the model, never its input: what the collector takes grows with the
requests in flight and how long their objects live, which the calibration does not reproduce
(CONTRACT.md, "Python's cyclic garbage collector", "V8's collector")."""

from __future__ import annotations

import contextlib
import http.client
from dataclasses import dataclass

from lab.proc import server
from lab.run import calibrate

INFO_TIMEOUT_S = 2.0
# Read around the load only where the server answers /info at once when k6 stops and where a
# collector can be what limited it: a cell bound by the server's CPU or by its VUs' cycle. A
# slot-bound server may still be working through requests k6 gave up on (a sync worker's
# listen backlog), and its slots' hold is its own measure.
LOAD_BOUNDS = ("server-cpu", "vus")


@dataclass(frozen=True)
class Reading:
    """One /info's collector beside the server tree's CPU, read together."""

    pid: int  # the process that answered /info (its collector is its own)
    seconds: float  # the CPU its collections took since it started
    cpu: tuple[float, float]  # the server's process tree's CPU then (calibrate.tree_cpu_s)
    # the sum of its collections' seconds squared (None: not stated)
    squares: float | None = None


def read(base: str, server_pid: int | None) -> Reading | None:
    """The collector of the process that answers /info now (None: no local server, no
    collector stated, or no answer: a server that died under the load is the failure rules'
    to report, not this reading's)."""
    if server_pid is None:
        return None
    with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
        status, body = server.get_json(f"{base}/info", INFO_TIMEOUT_S)
        timed = body.get("collector") if status == 200 and isinstance(body, dict) else None
        if isinstance(timed, dict) and isinstance(timed.get("seconds"), int | float):
            cpu = calibrate.tree_cpu_s(server_pid)
            squares = timed.get("seconds_squared")
            squares = float(squares) if isinstance(squares, int | float) else None
            return Reading(int(body.get("pid") or 0), float(timed["seconds"]), cpu, squares)
    return None


def share_pct(before: Reading | None, after: Reading | None) -> float | None:
    """The collector's share of the server's CPU between two readings, in %, where one process
    answered both and the tree used CPU meanwhile (another worker's collector is not its
    own: with several workers, None unless the same one answered)."""
    if before is None or after is None or before.pid != after.pid:
        return None
    used = calibrate.used_s(before.cpu, after.cpu)
    if used <= 0 or after.seconds < before.seconds:
        return None
    return round(100.0 * min(1.0, (after.seconds - before.seconds) / used), 1)


def pause_wait_ms(before: Reading | None, after: Reading | None, wall_s: float) -> float | None:
    """How long a request's step that falls at a random moment of wall_s waited, on average,
    for a collection in progress (it holds every request of its worker): the pauses' residual,
    sum(pause^2) / (2 wall_s), in ms. None where one process did not answer both readings or
    did not state its squares."""
    if before is None or after is None or before.pid != after.pid or wall_s <= 0:
        return None
    if before.squares is None or after.squares is None or after.squares < before.squares:
        return None
    return round((after.squares - before.squares) / (2 * wall_s) * 1000.0, 3)
