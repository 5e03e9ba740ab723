"""lab/run/runner.py: the rules that turn a measured cell into an error row (cell_problems,
failure_message), from plain facts; the texts are those the e2e fault tests find in real rows
(tests/e2e/test_faults.py, test_runner.py) and README's example."""

from __future__ import annotations

import errno
import signal
from pathlib import Path
from typing import Any

import pytest

from lab import rundir
from lab.run import runner
from lab.run.runner import (
    FAILED_SHARE_MAX,
    CellFacts,
    _disk_note,
    _explain,
    _failed_share,
    cell_problems,
    failure_message,
)

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

KILLED = -signal.SIGKILL  # a Popen returncode: killed by SIGKILL


def facts(**changes: Any) -> CellFacts:
    """A cell that went well (1000 requests, k6 exited 0 with a summary), changed."""
    values: dict[str, Any] = {
        "budget_s": 65.0,
        "k6_exit": 0,
        "summary": True,
        "requests": 1000,
        "failed_requests": 0,
    }
    return CellFacts(**{**values, **changes})


def test_a_cell_that_went_well_has_no_problem() -> None:
    assert cell_problems(facts()) == []
    assert failure_message(facts()) is None
    # --url: no server of ours, nothing to watch but k6
    assert failure_message(facts(local_server=False)) is None


# --- each rule, its text -------------------------------------------------------------------


def test_the_server_died() -> None:
    assert cell_problems(facts(server_exit=KILLED)) == [
        "the server was killed by SIGKILL during the cell"
    ]
    assert cell_problems(facts(server_exit=3)) == ["the server exited with 3 during the cell"]


def test_the_upstream_service_died() -> None:
    assert cell_problems(facts(upstream_pid=4711, upstream_exit=KILLED)) == [
        "the upstream service (pid 4711) was killed by SIGKILL during the cell"
    ]
    # alive, or no upstream at all: nothing to say
    assert cell_problems(facts(upstream_pid=4711)) == []
    assert cell_problems(facts(upstream_exit=KILLED)) == []


def test_k6_hung() -> None:
    # budget: the duration and the margin, in whole seconds (test_hung_k6_is_an_error_row)
    assert cell_problems(facts(k6_exit=None, budget_s=2.0)) == [
        "k6 did not finish within 2 s (hung?) and was stopped"
    ]
    assert cell_problems(facts(k6_exit=None, budget_s=63.4))[0].startswith(
        "k6 did not finish within 63 s"
    )


def test_k6_wrote_no_summary() -> None:
    assert cell_problems(facts(k6_exit=KILLED, summary=False, requests=None)) == [
        "k6 was killed by SIGKILL and wrote no summary"
    ]
    assert cell_problems(facts(k6_exit=107, summary=False)) == [
        "k6 exited with 107 and wrote no summary"
    ]
    # with the disk's note when the results disk is full
    note = " (the results disk is full: 12 bytes free at /out)"
    assert cell_problems(facts(k6_exit=0, summary=False, disk_note=note)) == [
        "k6 exited with 0 and wrote no summary (the results disk is full: 12 bytes free at /out)"
    ]


def test_too_many_failed_requests() -> None:
    # README's example: the upstream killed, its 502s named after the problems
    message = failure_message(
        facts(
            upstream_pid=4711,
            upstream_exit=KILLED,
            requests=2630,
            failed_requests=11160,
            failures="502×11160",
        )
    )
    assert message == (
        "the upstream service (pid 4711) was killed by SIGKILL during the cell; "
        "11160 of 13790 requests failed (80.93%, above 0.1%): 502×11160"
    )
    # every request failed: the share says so, not "no successful requests"
    assert cell_problems(facts(requests=0, failed_requests=10)) == [
        "10 of 10 requests failed (100.00%, above 0.1%)"
    ]


def test_no_successful_requests() -> None:
    text = "no successful requests (server stopped answering?)"
    assert cell_problems(facts(requests=0)) == [text]
    assert cell_problems(facts(requests=None, failed_requests=None)) == [text]
    # none was expected: the model's burst came after the window (the row is censored)
    assert cell_problems(facts(requests=0, none_expected=True)) == []
    # but a server that died is still named
    assert cell_problems(facts(requests=0, none_expected=True, server_exit=KILLED)) == [
        "the server was killed by SIGKILL during the cell"
    ]


def test_serving_processes_ended() -> None:
    assert cell_problems(facts(ended=(812,))) == [
        "1 serving process(es) of the server ended during the cell (pid 812), so it was not "
        "measured as configured"
    ]
    assert "(pid 812, 815)" in cell_problems(facts(ended=(812, 815)))[0]


def test_the_failures_follow_the_problems_and_count_only_with_one() -> None:
    # failures within the 0.1 % make no problem, and are not an error on their own
    assert failure_message(facts(requests=999, failed_requests=1, failures="timeout×1")) is None
    assert failure_message(facts(server_exit=KILLED, requests=0, failures="no answer×5")) == (
        "the server was killed by SIGKILL during the cell; no successful requests (server "
        "stopped answering?): no answer×5"
    )


# --- precedence ----------------------------------------------------------------------------


def test_every_dead_process_is_named_in_order_then_k6_then_the_restarts() -> None:
    problems = cell_problems(
        facts(
            server_exit=KILLED,
            upstream_pid=4711,
            upstream_exit=1,
            k6_exit=None,
            budget_s=5.0,
            ended=(812,),
        )
    )
    assert problems == [
        "the server was killed by SIGKILL during the cell",
        "the upstream service (pid 4711) exited with 1 during the cell",
        "k6 did not finish within 5 s (hung?) and was stopped",
        "1 serving process(es) of the server ended during the cell (pid 812), so it was not "
        "measured as configured",
    ]
    message = failure_message(facts(server_exit=KILLED, ended=(812,), requests=0))
    assert message is not None
    assert message.startswith("the server was killed by SIGKILL during the cell; no successful")
    assert message.endswith("(pid 812), so it was not measured as configured")


def test_of_k6s_outcome_only_the_first_that_applies() -> None:
    # hung beats a missing summary, failed requests and no requests
    hung = facts(k6_exit=None, budget_s=2.0, summary=False, requests=0, failed_requests=50)
    assert cell_problems(hung) == ["k6 did not finish within 2 s (hung?) and was stopped"]
    # a missing summary beats the counts (a summary's leftovers in the row are not read)
    lost = facts(k6_exit=KILLED, summary=False, requests=0, failed_requests=50)
    assert cell_problems(lost) == ["k6 was killed by SIGKILL and wrote no summary"]
    # failed requests beat "no successful requests"
    assert cell_problems(facts(requests=0, failed_requests=3))[0].startswith("3 of 3 requests")


# --- whose log tail the error ends with ---------------------------------------------------


def test_the_server_failed_when_it_died_or_answered_nothing() -> None:
    assert facts(server_exit=KILLED).server_failed
    assert facts(requests=0).server_failed
    assert facts(requests=None).server_failed
    assert not facts().server_failed
    # k6 or the upstream failing is not the server's failure
    assert not facts(k6_exit=None, upstream_pid=1, upstream_exit=KILLED).server_failed
    # with --url there is no server log of ours
    assert not facts(local_server=False, requests=0).server_failed


# --- the failed share and its threshold (0.1 %) -------------------------------------------


def test_failed_share() -> None:
    assert _failed_share(990, 10) == pytest.approx(0.01)
    assert _failed_share(0, 5) == 1.0
    assert _failed_share(100, 0) == 0.0
    assert _failed_share(None, None) == 0.0  # no summary: nothing sent that we know of
    assert _failed_share(0, 0) == 0.0
    assert _failed_share(None, 3) == 1.0


def test_the_threshold_is_a_tenth_of_a_percent_and_reaching_it_is_allowed() -> None:
    assert FAILED_SHARE_MAX == 0.001
    assert _failed_share(999, 1) == FAILED_SHARE_MAX
    assert cell_problems(facts(requests=999, failed_requests=1)) == []  # exactly 0.1 %: kept
    assert cell_problems(facts(requests=998, failed_requests=1)) == [
        "1 of 999 requests failed (0.10%, above 0.1%)"  # just above: an error
    ]
    assert cell_problems(facts(requests=1998, failed_requests=2)) == []
    assert cell_problems(facts(requests=1997, failed_requests=2)) != []
    # a 2 s cell of 20 requests tolerates no failure at all
    assert cell_problems(facts(requests=19, failed_requests=1)) == [
        "1 of 20 requests failed (5.00%, above 0.1%)"
    ]


# --- the disk's part in the texts ---------------------------------------------------------


def test_the_disk_note_only_when_the_disk_is_nearly_full(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(rundir, "free_bytes", lambda path: 12)
    assert _disk_note(tmp_path) == f" (the results disk is full: 12 bytes free at {tmp_path})"
    monkeypatch.setattr(rundir, "free_bytes", lambda path: rundir.DISK_LOW_BYTES)
    assert _disk_note(tmp_path) == ""
    monkeypatch.setattr(rundir, "free_bytes", lambda path: None)  # unknown: say nothing
    assert _disk_note(tmp_path) == ""


def test_a_full_disk_is_said_so(tmp_path: Path) -> None:
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.json"))
    assert _explain(full, tmp_path) == (
        f"the results disk is full (No space left on device: {tmp_path / 'x.json'})"
    )
    assert _explain(OSError(errno.ENOSPC, "No space left on device"), tmp_path).endswith(
        f": {tmp_path})"
    )
    assert _explain(runner.CellError("k6 hung"), tmp_path) == "k6 hung"
