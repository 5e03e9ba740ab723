"""Several load generators (--loadgens, --netns, --rtt-ms), the parts that need no root and
no k6: the options' checks (one line, exit 2), the instances' CPUs and the row's k6 columns,
a group of instances that ends together (lab/run/loadgen.py), and the model's load side
(lab/model.py). The namespaces' commands are tests/unit/test_netns.py's; the real thing
runs in tests/e2e/test_load_hosts.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lab import cli
from lab.proc import netns
from lab.proc.sampler import Usage
from lab.run import loadgen, runner
from lab.run.runner import CellFacts, cell_problems, instance_cpus
from lab.rundir import RunDir

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


# --- the options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "root", "expected"),
    [
        (["--loadgens", "0"], True, "--loadgens: expected an integer >= 1, got '0'"),
        (["--loadgens", "two"], True, "--loadgens: expected an integer >= 1, got 'two'"),
        (["--rtt-ms", "5"], True, "--rtt-ms delays the load hosts' links: it needs --netns"),
        (["--netns", "--rtt-ms", "-1"], True, "--rtt-ms: expected a number > 0, got '-1'"),
        (["--netns", "--rtt-ms", "nan"], True, "--rtt-ms: expected a number > 0, got 'nan'"),
        (["--netns"], False, "--netns needs root: it creates network namespaces"),
        (["--netns", "--loadgens", "2"], False, "--netns needs root"),
        (
            ["--netns", "--url", "http://127.0.0.1:9"],
            True,
            "--netns puts the lab's own servers on the load hosts' bridge",
        ),
        (["--resume", "x", "--loadgens", "2"], True, "drop --loadgens"),
        (["--resume", "x", "--netns"], True, "drop --netns"),
    ],
)
def test_a_wrong_load_option_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    root: bool,
    expected: str,
) -> None:
    monkeypatch.setattr(netns, "is_root", lambda: root)
    out = tmp_path / "out"
    assert exit_status(["bench", "go", "hello", *args, "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert expected in lines[0]
    assert not out.exists()  # nothing started


def exit_status(argv: list[str]) -> int | str | None:
    """lab's exit status: cli.main's, or argparse's (a bad value exits at once)."""
    try:
        return cli.main(argv)
    except SystemExit as ended:
        return ended.code


# --- the instances: their CPUs, their columns, their end ---------------------------------


def test_each_instance_gets_cpus_of_its_own_when_there_are_enough() -> None:
    assert instance_cpus([1], 2) == [[1], [1]]  # this host: all on the load side's one
    assert instance_cpus([4, 5, 6, 7], 2) == [[4, 5], [6, 7]]
    assert instance_cpus([4, 5, 6], 2) == [[4, 5], [6]]
    assert instance_cpus([4, 5], 3) == [[4], [5], [4]]
    assert instance_cpus([4, 5], 1) == [[4, 5]]
    assert instance_cpus(None, 2) == [None, None]


def test_the_row_shows_every_instance_cpu_and_their_sum() -> None:
    def used(pct: float) -> Usage:
        return Usage(pct, None, None, None)

    two = runner._usage({"k6.0": used(93.0), "k6.1": used(91.2)}, [0], [1], 1)
    assert (two["k6_cpu_pct"], two["k6_cpu_pcts"]) == (184.2, "93+91")
    assert two["loadgen_bound"]  # 184 % of a load side of one CPU
    one = runner._usage({"k6": used(60.0)}, [0], [1])
    assert (one["k6_cpu_pct"], one["k6_cpu_pcts"], one["loadgen_bound"]) == (60.0, "", False)


def test_an_instance_that_failed_makes_the_cell_an_error() -> None:
    failed = CellFacts(
        budget_s=62.0, k6_exit=-signal.SIGKILL, summary=False, k6_name="k6 instance 2 of 2",
        k6_failed=True,
    )  # fmt: skip
    assert cell_problems(failed) == [
        "k6 instance 2 of 2 was killed by SIGKILL (the other instances were stopped)"
    ]
    assert not failed.server_failed  # no server log beside it: the server answered
    hung = CellFacts(budget_s=62.0, k6_exit=None, summary=False, k6_name="k6 instance 1 of 2")
    assert cell_problems(hung) == [
        "k6 instance 1 of 2 did not finish within 62 s (hung?) and was stopped"
    ]


def _group(*scripts: str, tmp: Path) -> loadgen.LoadGroup:
    runs = []
    for i, script in enumerate(scripts):
        proc = subprocess.Popen(
            [sys.executable, "-c", script], start_new_session=True, stdout=subprocess.DEVNULL
        )
        runs.append(loadgen.K6Run(proc, tmp / f"{i}.json", tmp / f"{i}.log"))
    return loadgen.LoadGroup(runs)


def test_one_dead_instance_stops_the_others(tmp_path: Path) -> None:
    group = _group("import time; time.sleep(30)", "import sys; sys.exit(3)", tmp=tmp_path)
    started = time.monotonic()
    assert group.wait(timeout=20) == (3, 1)
    assert time.monotonic() - started < 5
    assert all(r.proc.poll() is not None for r in group.runs)  # none left running


def test_a_hung_instance_is_named_and_all_are_stopped(tmp_path: Path) -> None:
    group = _group("pass", "import time; time.sleep(30)", tmp=tmp_path)
    assert group.wait(timeout=0.5) == (None, 1)
    assert all(r.proc.poll() is not None for r in group.runs)
    done = _group("pass", "pass", tmp=tmp_path)
    assert done.wait(timeout=10) == (0, 0)


class StubServer:
    """gin for k6's measurement, never started."""

    url = "http://127.0.0.1:9"

    def start(self, timeout: float) -> StubServer:
        return self

    def stop(self) -> None:
        return None


def test_k6_is_measured_paced_after_its_top_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """k6 on gin's /hello, then on its /sync?ms=100 (waiting for its answers) at the same VUs:
    its CPU per request at either rate, the paced run in files of its own. A paced run that
    fails leaves the top rate's measurement (k6 then costs that at every rate)."""
    from lab.matrix import Cell
    from lab.run import calibrate

    readings: list[tuple[Cell, list[loadgen.Instance], float]] = []
    paced_fails = False

    def reading(cell: Cell, url: str, instances: list[loadgen.Instance], interval: float) -> Any:
        readings.append((cell, instances, interval))
        if cell.endpoint == "hello":  # k6 bound: its CPU over its top rate, 200 µs the median
            return [4000.0, 5000.0, 6250.0][len(readings) % calibrate.LOADGEN_READINGS - 1], 90.0
        if paced_fails:
            raise calibrate.CalibrationError("k6 measured nothing on /sync")
        return 490.0, 14.7  # 300 µs a request

    monkeypatch.delenv("LAB_K6_US", raising=False)
    monkeypatch.setattr(calibrate.server, "target_server", lambda *a, **k: StubServer())
    monkeypatch.setattr(calibrate, "_k6_reading", reading)
    cost = calibrate.loadgen_cost([1], [0], tmp_path, 50)
    assert cost.us_per_request == pytest.approx(200.0) and cost.rps == 5000.0
    # three top rates, 250, 200 and 160 µs: their spread is k6's own noise, each in its files
    assert cost.readings == 3 and cost.spread == pytest.approx(0.2218, abs=0.001)
    assert (cost.paced_us, cost.paced_rps) == (pytest.approx(300.0), 490.0)
    *tops, (paced, paced_k6, interval) = readings
    assert len(tops) == 3 and len({top[1][0].summary for top in tops}) == 3
    top_k6 = tops[0][1]
    assert (paced.endpoint, paced.params, paced.vus) == ("sync", (("ms", 100),), 50)
    assert paced_k6[0].summary != top_k6[0].summary and paced_k6[0].log != top_k6[0].log
    assert interval >= 0.5  # a k6 busy 15 %: more than a tick or two of 10 ms an interval
    paced_fails = True
    readings.clear()
    kept = calibrate.loadgen_cost([1], [0], tmp_path, 50)
    assert kept.source.startswith("measured") and kept.us_per_request == pytest.approx(200.0)
    assert (kept.paced_us, kept.paced_rps) == (None, None)


def test_k6_cost_is_measured_as_the_cells_k6_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instances of a split cell share the load side's CPUs, write each request
    (segments.output_args) and, with --netns, send through the load hosts' links: each costs
    k6 CPU, so k6's cost per request is measured with the cell's own instances, on the server's
    address (and says so); a plain run measures one k6 on loopback."""
    from lab.run import calibrate, segments

    groups: list[list[loadgen.Instance]] = []
    hosts: list[object] = []

    def start_group(cell: object, url: str, instances: list[loadgen.Instance], **_: object) -> Any:
        groups.append(instances)
        raise OSError("no k6 here")

    def target_server(*args: object, **kwargs: object) -> StubServer:
        hosts.append(kwargs["host"])
        return StubServer()

    monkeypatch.delenv("LAB_K6_US", raising=False)
    monkeypatch.setattr(calibrate.server, "target_server", target_server)
    monkeypatch.setattr(calibrate.loadgen, "start_group", start_group)
    one = runner.Runner(RunDir.create(tmp_path / "one"), runner.Options(pin=False))
    assert "measurement failed (no k6 here)" in one.loadgen_cost(50).source
    (plain,) = groups.pop()
    assert plain.run_args == () and plain.prefix == () and hosts.pop() == "127.0.0.1"
    split = runner.Runner(RunDir.create(tmp_path / "two"), runner.Options(pin=False, loadgens=2))
    split.loadgen_cost(50)
    first, second = groups.pop()
    folder = split.run.path / "calibration"
    assert first.summary.parent == folder and second.log.parent == folder
    assert list(second.run_args) == segments.k6_args(
        1, 2, folder / f"loadgen-50.1{segments.SAMPLES_SUFFIX}"
    )


def test_k6_is_measured_reconnecting_for_a_server_that_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a server that closes every connection k6 opens a new one per request (2-3 times
    the CPU of a kept-alive one): its reference runs then send every request on a new
    connection (--no-connection-reuse, top and paced), in files of their own beside the
    kept-alive ones', and the cost says how it was measured; the split cell's flags stay."""
    from lab.matrix import Cell
    from lab.run import calibrate

    readings: list[list[loadgen.Instance]] = []

    def reading(cell: Cell, url: str, instances: list[loadgen.Instance], interval: float) -> Any:
        readings.append(instances)
        return (2000.0, 90.0) if cell.endpoint == "hello" else (490.0, 12.0)

    monkeypatch.delenv("LAB_K6_US", raising=False)
    monkeypatch.setattr(calibrate.server, "target_server", lambda *a, **k: StubServer())
    monkeypatch.setattr(calibrate, "_k6_reading", reading)
    kept = calibrate.loadgen_cost([1], [0], tmp_path, 50)
    anew = calibrate.loadgen_cost([1], [0], tmp_path, 50, reconnect=True)
    assert not kept.reconnects and anew.reconnects
    assert "a new connection each" in anew.source and "new connection" not in kept.source
    n = calibrate.LOADGEN_READINGS  # top rates, then the paced one
    (top, paced), (top_anew, paced_anew) = readings[: n + 1 : n], readings[n + 1 :: n]
    for plain, new in ((top, top_anew), (paced, paced_anew)):
        assert calibrate.NO_REUSE not in plain[0].run_args
        assert list(new[0].run_args) == [calibrate.NO_REUSE]
        assert new[0].summary != plain[0].summary and new[0].log != plain[0].log
    split = [
        loadgen.Instance(tmp_path / f"s{i}.json", tmp_path / f"s{i}.log", [1], ("--segment",))
        for i in range(2)
    ]
    readings.clear()
    both = calibrate.loadgen_cost([1], [0], tmp_path, 50, split, reconnect=True)
    assert "every request written" in both.source and "2 instances" in both.source
    assert all(list(i.run_args) == ["--segment", calibrate.NO_REUSE] for i in readings[0])


# A server that keeps its connections (HTTP/1.1) or closes each after its reply (HTTP/1.0,
# as gunicorn's sync worker does with Connection: close).
KEEPS_OR_CLOSES = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = sys.argv[2]
    def log_message(self, *a): pass
    def do_GET(self):
        body = b'{"endpoint": "hello"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.mark.parametrize("protocol, closes", [("HTTP/1.1", False), ("HTTP/1.0", True)])
def test_the_calibration_tells_a_server_that_closes_its_connections(
    protocol: str, closes: bool
) -> None:
    """The calibration's first replies say whether the server closes its connections (the
    runner then measures k6 reconnecting); its requests go on, each on a new connection."""
    from harness.support import script_server

    from lab.contract import load
    from lab.matrix import Cell
    from lab.run import calibrate

    cell = Cell("fake", "closing", "hello", (), 50, None, "3s", 1)
    with script_server(KEEPS_OR_CLOSES, protocol) as (base, pid):
        cost = calibrate.server_cost(base, load()["hello"], cell, pid, wall_s=0.3)
    assert cost.closes is closes
    assert cost.requests >= calibrate.MIN_REQUESTS and cost.cpu_ms
