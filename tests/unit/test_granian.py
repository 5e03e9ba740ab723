"""labkit.granian: /info under granian comes from the options the server was started with, read
by granian's own parser (flags, GRANIAN_* variables, defaults), and the capacity it derives
follows them and holds when timed."""

from __future__ import annotations

import os
import sys

import pytest
from granian.constants import Interfaces
from granian.server.mp import MPServer

from lab.contract import load
from labkit import granian, info

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

CONTRACT = load()


@pytest.fixture(autouse=True)
def no_granian_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("GRANIAN_")]:
        monkeypatch.delenv(name)


def test_options_from_the_command_line() -> None:
    argv = ["--interface", "wsgi", "--workers=2", "--blocking-threads", "4",
            "--workers-kill-timeout", "3", "--runtime-threads", "2", "app:app"]  # fmt: skip
    o = granian.options(argv)
    assert (o.interface, o.workers, o.blocking_threads, o.runtime_threads) == ("wsgi", 2, 4, 2)
    assert o.workers_kill_timeout == 3.0
    assert o.backpressure == 512  # backlog 1024 / 2 workers
    assert o.wsgi_threads == 4
    assert o.runtime_mode == "mt"


def test_options_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRANIAN_WORKERS_KILL_TIMEOUT", "2s")
    monkeypatch.setenv("GRANIAN_BACKPRESSURE", "3")
    monkeypatch.setenv("GRANIAN_RUNTIME_THREADS", "2")
    o = granian.options(["--interface", "wsgi", "--blocking-threads", "8", "app:app"])
    assert o.workers_kill_timeout == 2.0
    assert o.wsgi_threads == 3  # backpressure caps the threads a worker keeps busy
    assert o.runtime_threads == 2
    assert granian.options(["--runtime-threads", "3", "app:app"]).runtime_threads == 3  # flag wins


def test_granian_defaults() -> None:
    o = granian.options(["app:app"])
    assert (o.interface, o.workers, o.runtime_mode) == ("rsgi", 1, "st")
    assert o.workers_kill_timeout is None  # the master waits for its workers for ever
    assert info.graceful_timeout_s("granian", ["app:app"]) is None
    assert info.graceful_timeout_s("granian", ["--workers-kill-timeout", "3", "app:app"]) == 3.0


def test_free_threaded_python_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    with pytest.raises(RuntimeError, match="free-threaded"):
        granian.options(["app:app"])


@pytest.mark.parametrize(
    ("interface", "workers", "blocking", "backpressure"),
    [("wsgi", 1, None, None), ("wsgi", 3, None, None), ("wsgi", 2, None, 7),
     ("asgi", 2, None, None), ("wsgi", 2, 4, None)],
)  # fmt: skip
def test_derived_values_match_granians_own(
    interface: str, workers: int, blocking: int | None, backpressure: int | None
) -> None:
    argv = ["--interface", interface, "--workers", str(workers), "app:app"]
    argv += ["--blocking-threads", str(blocking)] if blocking else []
    argv += ["--backpressure", str(backpressure)] if backpressure else []
    ours = granian.options(argv)
    theirs = MPServer(
        "app:app",
        interface=Interfaces(interface),
        workers=workers,
        blocking_threads=blocking,
        backpressure=backpressure,
        log_enabled=False,
    )
    assert (ours.blocking_threads, ours.backpressure) == (
        theirs.blocking_threads,
        theirs.backpressure,
    )
