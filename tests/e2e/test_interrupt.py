"""Issue 14's hang, reproduced: a KeyboardInterrupt raised by a signal handler between
Popen's `_waitpid_lock.acquire(False)` and its `try:` leaves the lock held for ever; the next
Popen.wait() without a timeout then blocks on it (a futex) and the child stays a zombie.
lab.proc.interrupt never raises inside subprocess, and every wait of the runner is bounded."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from lab import ROOT
from lab.proc import children, interrupt
from lab.run import loadgen

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

# A child Python that interrupts busy Popen polls with a storm of SIGTERMs aimed at its main
# thread until Popen's lock is found held outside any wait (leaked), or time is up. A tiny
# switch interval makes the GIL change hands at every bytecode boundary, as the sampler
# thread and a busy CPU make it do in a real run: that widens the race from nanoseconds.
STORM = textwrap.dedent(
    """
    import signal, subprocess, sys, threading, time
    from lab.proc import interrupt

    HANDLER, SECONDS = sys.argv[1], float(sys.argv[2])
    # lab's handler lets few signals through (1-14 in 5 s here): the storm goes on, up to 3x
    # as long, until at least this many reached the loop
    AT_LEAST = int(sys.argv[3])
    main = threading.get_ident()
    stop = threading.Event()
    sent = 0

    go = threading.Event()

    def storm():
        global sent
        go.wait()
        while not stop.is_set():
            signal.pthread_kill(main, signal.SIGTERM)
            sent += 1
            time.sleep(0.0002)

    armed = False

    def naive(signum, frame):  # the runner's old handler, armed once per attempt
        global armed
        if armed:
            armed = False
            raise KeyboardInterrupt

    def poll_busily():
        while True:
            proc.poll()
            try:
                proc.wait(timeout=1e-7)
            except subprocess.TimeoutExpired:
                pass

    proc = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sys.setswitchinterval(1e-6)
    signal.signal(signal.SIGTERM, naive)  # never the default action (death) meanwhile
    storming = threading.Thread(target=storm, daemon=True)
    storming.start()
    leaked, interrupts, t0 = False, 0, time.monotonic()
    while True:
        try:
            go.set()
            leaked = proc._waitpid_lock.locked()  # outside any wait: held means leaked
            elapsed = time.monotonic() - t0
            if leaked or (elapsed > SECONDS and interrupts >= AT_LEAST) or elapsed > 3 * SECONDS:
                break
            if HANDLER == "naive":
                armed = True
                poll_busily()
            else:
                with interrupt.handling():  # a fresh run: its first signal raises again
                    poll_busily()
        except KeyboardInterrupt:
            interrupts += 1
    while True:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            pass
    stop.set()
    storming.join()
    proc.kill()
    print(f"leaked={leaked} interrupts={interrupts} signals={sent}", flush=True)
    """
)


def storm(handler: str, seconds: float, at_least: int = 0) -> tuple[bool, int]:
    done = subprocess.run(
        [sys.executable, "-c", STORM, handler, str(seconds), str(at_least)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3 * seconds + 30,
        check=False,
    )
    fields = dict(f.split("=") for f in done.stdout.split())
    assert fields, done.stderr
    return fields["leaked"] == "True", int(fields["interrupts"])


def test_our_interrupt_handling_never_leaks_popen_lock() -> None:
    """lab.proc.interrupt under a storm of SIGTERMs for 5 s, longer (up to 15 s) until 5 of them
    reached the loop (the naive handler below leaks the lock within about 1 s on a busy
    machine): the lock never leaks, and the storm did reach the loop.

    How many signals reach it is the machine's business, not the handler's: the poll loop
    spends nearly all its time inside subprocess, and a storm signal every 0.2 ms re-arms the
    1 ms retry before it fires, so only a signal that lands on the loop's few bytecodes of its
    own raises (19 in 5 s on an idle machine, 4 in 15 s in a loaded CI run). That the retry
    raises once the main thread has left subprocess is the next test's, signal by signal."""
    leaked, interrupts = storm("lab", 5.0, at_least=5)
    assert interrupts >= 1  # the storm reached the loop: a handler that swallows signals fails
    assert not leaked


def test_a_signal_inside_subprocess_is_raised_as_soon_as_the_thread_leaves_it() -> None:
    """The retry path, one signal at a time: a SIGTERM that finds the main thread inside
    Popen.wait(timeout) is not raised there (that is what leaks the lock) but 1 ms later,
    at the first bytecode outside subprocess; the lock stays free. Ten signals, each raised
    within a second of the wait that held it ending."""
    proc = subprocess.Popen(["sleep", "60"])
    main = threading.get_ident()
    try:
        for _ in range(10):
            with interrupt.handling():
                threading.Timer(0.02, signal.pthread_kill, (main, signal.SIGTERM)).start()
                waited_until = time.monotonic() + 5
                with pytest.raises(KeyboardInterrupt) as raised:
                    while time.monotonic() < waited_until:
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(timeout=0.2)  # the signal lands in here
                        time.sleep(0.05)  # outside subprocess: where the retry may raise
            # the frame the handler interrupted (the last entry is the handler's own)
            interrupted = raised.traceback[-2].frame.code.path
            assert str(interrupted) != subprocess.__file__, "raised inside subprocess"
            assert not proc._waitpid_lock.locked()
            assert time.monotonic() < waited_until - 4  # within a second, not at the end
    finally:
        proc.kill()
        proc.wait(timeout=5)


def test_a_naive_interrupt_leaks_popen_lock() -> None:
    """The cause of the hang (issue 14): a handler that raises anywhere leaks Popen's lock.
    The race needs a busy machine (GIL hand-offs between the storm and the poll loop): it
    reproduced in 0.2-1.4 s in 4 of 4 runs under load, but may not on an idle machine, where
    this demonstration is skipped rather than called proof (after 9 s: 15 s, when it was 3 x 5,
    was a full run's fifth-longest test)."""
    for _ in range(3):
        leaked, _ = storm("naive", 3.0)
        if leaked:
            return
    pytest.skip("the signal storm did not reproduce the leaked lock on this idle machine")


def test_k6_kill_is_bounded_even_with_a_leaked_lock(tmp_path: Path) -> None:
    """The exact state of the hang: Popen's lock held by nobody alive. The old K6Run.kill()
    blocked for ever in Popen.wait(); now every wait is timed and the process still dies."""
    log = tmp_path / "k6.log"
    with log.open("wb") as out:
        proc = children.spawn(["sleep", "60"], "k6", {"PATH": "/usr/bin:/bin"}, stdout=out)
    run = loadgen.K6Run(proc, tmp_path / "summary.json", log)
    assert proc._waitpid_lock.acquire(False)  # what the interrupted wait left behind
    try:
        finished = threading.Event()
        started = time.monotonic()
        worker = threading.Thread(target=lambda: (run.kill(grace=1.0), finished.set()))
        worker.start()
        worker.join(timeout=10)
        assert finished.is_set(), "K6Run.kill() blocked on Popen's lock"
        assert time.monotonic() - started < 5
        status = psutil.Process(proc.pid).status()
        assert status == psutil.STATUS_ZOMBIE  # ended: only the leaked lock keeps it unreaped
    finally:
        proc._waitpid_lock.release()
        proc.wait(timeout=5)


def test_cleanup_is_not_cut_short_by_a_second_signal() -> None:
    """`timeout` signals the whole group and just forwards SIGTERM too: two signals. The
    second, inside clean-up, must not raise (it once left the server running)."""
    cleaned = False
    with interrupt.handling(), pytest.raises(KeyboardInterrupt):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            with interrupt.shielded():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                cleaned = True
    assert cleaned


def test_a_signal_during_cleanup_is_acted_on_after_it() -> None:
    with interrupt.handling():
        with interrupt.shielded():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # not interrupted
        assert interrupt.requested()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
        interrupt.check()  # once only
