"""Samples CPU and memory of process trees while a cell runs: the server with all its
workers and pool processes, and k6 itself."""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from dataclasses import dataclass

import psutil

from lab.proc import children


@dataclass
class Usage:
    cpu_pct: float | None  # CPU time over wall time, in % of one core (200 = two cores busy)
    rss_mb: float | None  # peak resident memory of the whole tree
    samples: int
    # The median of the per-interval CPU %: how busy the tree typically was while loaded,
    # unmoved by the idle second of k6 starting up and draining that the mean includes.
    busy_pct: float | None = None
    threads: int | None = None  # the most OS threads the whole tree held at one sample


class _Tree:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start_cpu: dict[int, float] = {}
        self.last_cpu: dict[int, float] = {}
        self.peak_rss = 0
        self.peak_threads = 0
        self.samples = 0
        self.timeline: list[tuple[float, float]] = []  # (monotonic time, CPU seconds so far)
        self.workers: set[int] = set()  # the top's children (workers) seen while sampling
        self.ended: set[int] = set()  # those that were gone at a later sample

    def processes(self) -> list[psutil.Process]:
        return children.tree(self.pid)

    def _watch_workers(self, processes: list[psutil.Process]) -> None:
        """While the top lives, a worker (its child) that ends is news: it died, or was
        restarted under a new pid. (Pool processes below a worker end with their worker.)"""
        live = set()
        for p in processes[1:]:
            with contextlib.suppress(psutil.Error):
                if p.ppid() == self.pid and children.running(p):
                    live.add(p.pid)
        if processes and processes[0].pid == self.pid and children.running(processes[0]):
            self.ended |= self.workers - live
        self.workers |= live

    def sample(self, first: bool = False) -> None:
        rss = threads = 0
        processes = self.processes()
        self._watch_workers(processes)
        for p in processes:
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                used = t.user + t.system
                # A process born during the window counts from zero.
                self.start_cpu.setdefault(p.pid, used if first else 0.0)
                self.last_cpu[p.pid] = used
                rss += p.memory_info().rss
                threads += p.num_threads()
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_threads = max(self.peak_threads, threads)
        self.samples += 1
        self.timeline.append((time.monotonic(), self.cpu_seconds()))

    def busy_pct(self) -> float | None:
        rates = [
            100.0 * (c2 - c1) / (t2 - t1)
            for (t1, c1), (t2, c2) in zip(self.timeline, self.timeline[1:], strict=False)
            if t2 > t1
        ]
        return statistics.median(rates) if rates else None

    def cpu_seconds(self) -> float:
        return sum(self.last_cpu[pid] - self.start_cpu[pid] for pid in self.last_cpu)


def kernel_seconds(cpus: list[int]) -> float:
    """The kernel's interrupt work so far (irq and softirq: loopback's packets among it) on
    these CPUs, which no process's CPU time holds."""
    times = psutil.cpu_times(percpu=True)
    return sum(times[c].irq + times[c].softirq for c in cpus if c < len(times))


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by a process and everything below it."""
    tree = _Tree(pid)
    tree.sample(first=False)
    return sum(tree.last_cpu.values())


class Sampler:
    """Call start() when the load starts and stop() when it ends."""

    def __init__(self, pids: dict[str, int], interval: float = 0.25) -> None:
        self.trees = {name: _Tree(pid) for name, pid in pids.items()}
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._started = 0.0
        self._wall = 0.0

    def start(self) -> Sampler:
        for tree in self.trees.values():
            tree.sample(first=True)
        self._started = time.monotonic()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            for tree in self.trees.values():
                tree.sample()

    def stop(self) -> dict[str, Usage]:
        """Stop sampling (bounded: the thread is a daemon and gets 2 s); the usage so far.
        Calling it again returns the same usage."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=2.0)
            for tree in self.trees.values():
                tree.sample()
            self._wall = time.monotonic() - self._started
        return {name: self._usage(t) for name, t in self.trees.items()}

    def ended(self, name: str) -> list[int]:
        """Workers (children of the tree's top) that ended while it was sampled: died or
        restarted during the cell."""
        tree = self.trees.get(name)
        return sorted(tree.ended) if tree else []

    def _usage(self, tree: _Tree) -> Usage:
        if not self._wall or tree.samples < 2:
            return Usage(None, None, tree.samples)
        return Usage(
            100.0 * tree.cpu_seconds() / self._wall,
            tree.peak_rss / 2**20,
            tree.samples,
            tree.busy_pct(),
            tree.peak_threads,
        )
