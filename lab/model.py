"""The capacity model: what a cell's throughput and latency should be, from Little's law and
what the server says of itself in /info. Each rule reads like the table in CONTRACT.md.

  sleep/upstream, closed model, N VUs, capacity C, service time S:
      rps = min(N, C) / S            latency = N / rps   (queueing beyond C)
  open model at rate R:
      rps = min(R, C / S)            latency = S below saturation; above it, overloaded
  cpu: S calibrated on this target with one request at a time; C = parallel slots:
      min(capacity, CPUs), and for Python inline work also at most one per worker (GIL)
  hello: no model; a cell whose load generator is saturated is marked loadgen-bound
  below the model on a waiting endpoint with the server's CPUs saturated: server-cpu-bound
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A correct model lands within 10 %: k6 drains the last service time of every VU into the
# cell's duration (1 % at S=100 ms over 10 s, 2 % over 5 s), each request adds 1-5 ms of HTTP
# and scheduling to S (1-5 % at 100 ms), and repeated cells vary by a few percent. A wrong
# capacity misses by a whole factor (1/C or more), far outside this band.
TOLERANCE = 0.10
LOADGEN_BOUND_PCT = 80.0  # k6 at this share of its CPUs is the bottleneck, not the server
# A server this busy on a waiting endpoint is limited by its own CPU work (HTTP parsing,
# an HTTP client's fan-out), which the waiting model leaves out.
SERVER_BOUND_PCT = 85.0


@dataclass(frozen=True)
class Prediction:
    rps: float | None
    latency_ms: float | None
    slots: float | None  # requests served at once in the model (inf = unbounded)
    service_ms: float | None
    overloaded: bool = False  # open model with a rate above what the server can serve


def parallel_slots(kind: str, endpoint: str, info: dict[str, Any]) -> float:
    """How many requests the server serves at once for this endpoint."""
    capacity = info.get("capacity", {}).get(endpoint)
    slots = float("inf") if capacity is None else float(capacity)
    if kind == "cpu":
        slots = min(slots, float(info.get("cpus") or 1))
        if endpoint == "cpu" and info.get("language") == "python":
            slots = min(slots, float(info.get("workers") or 1))  # one GIL per process
    return slots


def predict(
    kind: str,
    endpoint: str,
    service_ms: float | None,
    vus: int,
    rate: float | None,
    info: dict[str, Any],
) -> Prediction:
    """The model's throughput and mean latency for one cell; None where it has no rule."""
    if kind not in ("sleep", "upstream", "cpu") or not service_ms or not info:
        return Prediction(None, None, None, service_ms)
    slots = parallel_slots(kind, endpoint, info)
    s = service_ms / 1000.0
    if rate:
        ceiling = slots / s
        if rate > ceiling:
            return Prediction(ceiling, None, slots, service_ms, overloaded=True)
        return Prediction(float(rate), service_ms, slots, service_ms)
    rps = min(float(vus), slots) / s
    return Prediction(rps, vus / rps * 1000.0, slots, service_ms)


def verdict(efficiency: float | None, loadgen_bound: bool, server_cpu_bound: bool = False) -> str:
    if loadgen_bound and (efficiency is None or efficiency < 1 - TOLERANCE):
        return "loadgen-bound"
    if efficiency is None:
        return "no model"
    if efficiency < 1 - TOLERANCE:
        return "server-cpu-bound" if server_cpu_bound else "below model"
    if efficiency > 1 + TOLERANCE:
        return "above model"
    return "as predicted"


def efficiency(measured_rps: float | None, predicted_rps: float | None) -> float | None:
    if not measured_rps or not predicted_rps:
        return None
    return measured_rps / predicted_rps
