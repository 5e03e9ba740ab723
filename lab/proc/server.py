"""Runs one server process tree: build it, start it, wait until /health answers, stop it and
prove nothing of it is left. Used by `just serve`, the conformance suite and the runner; the
`lab build` command (every target's build step and the upstream) is here too. What a server
has alike with the database (lab/proc/database.py) is ProcessWithLog."""

from __future__ import annotations

import abc
import argparse
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self

import psutil

from lab import ROOT
from lab.contract import OPENAPI
from lab.proc import children
from lab.targets import Target, discover
from labkit import knobs

HOST = "127.0.0.1"
BUILD_DIR = ROOT / ".build"
UPSTREAM_SOURCE = ROOT / "go"
STOP_GRACE_S = 5.0
BUILD_TIMEOUT_S = 600.0


class ServerError(RuntimeError):
    """A server failed to build, start or answer; the message carries its log's tail."""


def is_loopback(host: str) -> bool:
    """Whether host is this machine's loopback (localhost, 127.0.0.0/8, ::1)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port(host: str = HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
        return False


def wait_port_free(port: int, host: str, timeout: float) -> bool:
    """Whether the port is free, waiting up to `timeout` s for it to be."""
    deadline = time.monotonic() + timeout
    while port_in_use(port, host):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def get_json(url: str, timeout: float = 5.0) -> tuple[int, Any]:
    """GET a URL; (status, decoded JSON or None). Never raises for an HTTP error status."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


_built: set[tuple[str, ...]] = set()
# Held through a build: servers started from several threads at once (the conformance suite's
# batches) must neither build the same target twice at once nor start one mid-build (the JVM
# targets' jar half written: "Could not find or load main class").
_building = threading.Lock()


def run_build(command: tuple[str, ...], cwd: Path) -> None:
    """Run a build step once per process (go build is incremental, but not free)."""
    with _building:
        _run_build(command, cwd)


def _run_build(command: tuple[str, ...], cwd: Path) -> None:
    if not command or command in _built:
        return
    try:
        done = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, check=False, timeout=BUILD_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"build failed: {' '.join(command)}: {exc}") from None
    if done.returncode != 0:
        raise ServerError(f"build failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    _built.add(command)


@dataclass
class StopReport:
    """How a stop went: clean means SIGTERM alone ended the tree in time and the port is free."""

    exit_code: int | None
    seconds: float
    leftover: list[int] = field(default_factory=list)  # pids SIGKILL had to end
    port_free: bool = True

    @property
    def clean(self) -> bool:
        return not self.leftover and self.port_free


class ProcessWithLog(abc.ABC):
    """What a server (ServerProcess) and the database (lab.proc.database) have alike: a
    process tree on host:port, started by start() and ended by stop() (a `with` block does
    both), its output in a log file."""

    name: str
    host: str
    port: int
    proc: subprocess.Popen[bytes] | None
    _log: IO[bytes] | None  # the log, open while the process runs

    @property
    @abc.abstractmethod
    def log_path(self) -> Path | None: ...

    @abc.abstractmethod
    def start(self) -> Self: ...

    @abc.abstractmethod
    def stop(self) -> StopReport: ...

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tree(self) -> list[psutil.Process]:
        """The process and every process below it."""
        return children.tree(self.proc.pid) if self.proc else []

    def _reaped(self) -> bool:
        """A stop's last steps, once the tree has been ended: the top process waited for (at
        most 2 s), the supervisor told, the log closed. Whether the port is free (within 2 s)."""
        assert self.proc is not None
        children.wait(self.proc, 2.0)
        children.forget(self.proc, self.name)
        if self._log:
            self._log.close()
            self._log = None
        return wait_port_free(self.port, self.host, 2.0)

    def log_tail(self, lines: int = 20) -> str:
        """The log's last lines ('' while there is none, or it cannot be read)."""
        try:
            text = self.log_path.read_text(errors="replace") if self.log_path else ""
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerProcess(ProcessWithLog):
    """One server's process tree, in its own session so that the whole group can be ended."""

    def __init__(
        self,
        name: str,
        command: list[str],
        cwd: Path,
        env: dict[str, str],
        port: int,
        host: str = HOST,
        log: Path | None = None,
        cpus: list[int] | None = None,
    ) -> None:
        self.name = name
        self.command = (["taskset", "-c", ",".join(map(str, cpus))] if cpus else []) + command
        self.cwd = cwd
        self.env = env
        self.host = host
        self.port = port
        self.cpus = cpus
        self._log_path = log  # without one, a temporary file once there is output to keep
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, health_timeout: float = 30.0, show_output: bool = False) -> Self:
        """Start and wait for /health. Output goes to the log file, or to ours with show_output.
        The server gets its own session: Ctrl-C reaches the lab, which stops it in order."""
        self.launch(show_output)
        try:
            self.wait_healthy(health_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self, show_output: bool = False) -> None:
        """Start the process, without waiting for it to be ready (wait_healthy). From the main
        thread: the parent-death signal follows the thread that forks (lab.proc.children)."""
        if port_in_use(self.port, self.host):
            raise ServerError(f"port {self.port} on {self.host} is already in use")
        out: IO[bytes] | None = None
        if not show_output:
            if self._log_path is None:  # not for show_output: `lab serve` would leave it empty
                fd, name = tempfile.mkstemp(prefix=f"lab-{self.name}-", suffix=".log")
                os.close(fd)
                self._log_path = Path(name)
            self._log = out = self._log_path.open("wb")
        self.proc = children.spawn(
            self.command,
            self.name,
            self.env,
            cwd=self.cwd,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
        )

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise ServerError(
                    f"{self.name} exited with {code} before it was ready\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError):
                status, _ = get_json(f"{self.url}/health", timeout=1.0)
                if status == 200:
                    return
            time.sleep(0.05)
        raise ServerError(
            f"{self.name} did not answer /health within {timeout:.0f} s\n{self.log_tail()}"
        )

    def _group(self) -> list[int]:
        """Live processes in the server's process group (orphans keep their group)."""
        pids = []
        for p in psutil.process_iter(["status"]):
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if os.getpgid(p.pid) == self.pid and p.info["status"] != psutil.STATUS_ZOMBIE:
                    pids.append(p.pid)
        return pids

    def stop(self, grace: float = STOP_GRACE_S) -> StopReport:
        """SIGTERM the server, wait up to `grace`, then SIGKILL whatever of it is left.
        Every wait is bounded: a stop takes at most grace + about 3 s."""
        if self.proc is None:
            return StopReport(None, 0.0)
        started = time.monotonic()
        tree = self.tree()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
        children.wait(self.proc, grace)
        # Children may outlive the top process for a moment; give them the rest of the grace.
        # Not the top process itself: psutil would reap it behind Popen's back (exit code lost).
        below = [p for p in tree if p.pid != self.pid]
        alive = children.wait_ended(below, max(0.1, grace - (time.monotonic() - started)))
        leftover = sorted({p.pid for p in alive} | set(self._group()))
        if self.proc.poll() is None:
            leftover = sorted({self.pid, *leftover})
        if leftover:
            children.kill_group(self.pid)
            for p in alive:
                with contextlib.suppress(psutil.Error):
                    p.kill()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        port_free = self._reaped()
        return StopReport(self.proc.returncode, time.monotonic() - started, leftover, port_free)


def _bin_dir() -> Path:
    """The project environment's bin folder (where uvicorn, gunicorn, ... live)."""
    return Path(sys.executable).parent


def target_env(
    target: Target,
    profile: str,
    port: int,
    host: str,
    workers: int,
    upstream_url: str,
    overrides: dict[str, str],
    bin_dir: Path | None = None,
) -> dict[str, str]:
    """The environment a target starts with: the profile's defaults, then the caller's own
    environment (so WORKERS=3 on the command line wins), then the lab's fixed variables.
    bin_dir: another interpreter's environment (lab.interpreters) instead of the lab's own."""
    env = {**target.profile(profile).env, **os.environ, **overrides}
    env.update(
        PATH=f"{bin_dir or _bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}",
        HOST=host,
        PORT=str(port),
        WORKERS=str(workers),
        LAB_TARGET=target.name,
        LAB_PROFILE=profile,
        LAB_CONTRACT=str(OPENAPI),
        UPSTREAM_URL=upstream_url,
        PYTHONUNBUFFERED="1",
    )
    return env


def target_server(
    target: Target,
    profile: str | None = None,
    *,
    port: int | None = None,
    host: str = HOST,
    upstream_url: str = "http://127.0.0.1:8001",
    cpus: list[int] | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    bin_dir: Path | None = None,
) -> ServerProcess:
    """A target's server, ready to start: built, command filled in from its manifest.
    bin_dir: the bin folder of the Python environment to serve on (default: the lab's)."""
    prof = target.profile(profile)
    port = port or free_port(host)
    base = {**os.environ, **(env or {})}
    workers = int(base.get("WORKERS") or (len(cpus) if cpus else knobs.cpus()))
    full_env = target_env(target, prof.name, port, host, workers, upstream_url, env or {}, bin_dir)
    values = {
        "host": host,
        "port": str(port),
        "workers": str(workers),
        "threads": full_env.get("THREADS", ""),
        "root": str(ROOT),
    }
    command = [fill(part, target, values) for part in prof.command]
    if "{threads}" in " ".join(prof.command) and not values["threads"]:
        raise ServerError(f"{target.name}/{prof.name} needs THREADS")
    exe = shutil.which(command[0], path=full_env["PATH"])
    if exe:
        command[0] = exe
    run_build(tuple(fill(p, target, values) for p in target.build), target.folder)
    return ServerProcess(
        f"{target.name}-{prof.name}", command, target.folder, full_env, port, host, log, cpus
    )


def fill(part: str, target: Target, values: dict[str, str] | None = None) -> str:
    """A manifest string with its {placeholders} filled in."""
    return part.format(**{"root": str(ROOT), "folder": str(target.folder), **(values or {})})


def build_upstream() -> Path:
    binary = BUILD_DIR / "upstream"
    run_build(("go", "build", "-o", str(binary), "./upstream"), UPSTREAM_SOURCE)
    return binary


def cmd_build(args: argparse.Namespace) -> int:
    """`lab build`: every target that has a build step (found from manifests), and the upstream."""
    for t in discover():
        if t.build:
            run_build(tuple(fill(p, t) for p in t.build), t.folder)
            print(f"built {t.name}")
    build_upstream()
    print("built upstream")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("build", help="build every target that needs it, and the upstream")
    p.set_defaults(run=cmd_build)


# The upstream service's real-time priority where it runs on the load side's CPUs: a woken
# thread of it then runs at once instead of waiting for k6's time slice to end, as a service
# on a host of its own would (gin /upstream?ms=100&n=10 at 100 VUs: 961-965 rps with it,
# 930-941 without, the model 957-963: CONTRACT.md, "Go's /upstream"). Low among real-time
# priorities; the kernel's real-time throttling still leaves k6 5 % of the CPU at worst.
UPSTREAM_PRIORITY = 10


def realtime(pid: int, priority: int = UPSTREAM_PRIORITY) -> str:
    """Every thread of process pid at SCHED_FIFO `priority` (the threads it starts later
    inherit it): what it runs at now, in words, or why it stays at the normal policy."""
    try:
        tasks = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        for tid in tasks:
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"normal (SCHED_FIFO refused: {why})"
    return f"SCHED_FIFO {priority}"


def upstream_server(
    port: int | None = None,
    host: str = HOST,
    cpus: list[int] | None = None,
    log: Path | None = None,
) -> ServerProcess:
    """The Go upstream service that /upstream endpoints call (its output in `log`, else in a
    temporary file)."""
    binary = build_upstream()
    port = port or free_port(host)
    env = {**os.environ, "HOST": host, "PORT": str(port), "LAB_CONTRACT": str(OPENAPI)}
    return ServerProcess(
        "upstream", [str(binary)], UPSTREAM_SOURCE, env, port, host, log=log, cpus=cpus
    )
