"""A target served on another interpreter for real: one cell on Python 3.13, and `lab serve`
with PYTHON=3.13."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from harness.labrun import ENV, run_lab

from lab import ROOT, interpreters
from lab.proc import server

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e


# --- real servers on Python 3.13 ----------------------------------------------------------


def set_up(label: str) -> bool:
    return any(i.label == label for i in interpreters.available())


needs_313 = pytest.mark.skipif(
    not set_up("3.13"), reason="Python 3.13 is not set up (just setup makes .venvs/3.13 when found)"
)


@needs_313
def test_one_cell_on_python_313(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_lab(
        "bench", "starlette", "hello", "--python", "3.13", "--duration", "2s", "--vus", "5",
        "--canary-rate", "0", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in out.iterdir() if p.name != "latest"]
    with (run / "results.csv").open(newline="") as f:
        (result,) = list(csv.DictReader(f))
    assert result["status"] == "ok", result["error"]
    assert result["cell"] == "starlette/uvicorn+py3.13/hello?@vus=5#1"
    assert result["python"].startswith("3.13.")
    assert (result["python_impl"], result["gil"]) == ("cpython", "true")
    meta = json.loads((run / "run.json").read_text())
    assert [i["label"] for i in meta["interpreters"]["used"]] == ["3.13"]
    assert meta["servers"]["starlette/uvicorn+py3.13"]["language_version"] == result["python"]


@needs_313
def test_serve_on_python_313() -> None:
    port = server.free_port()
    # No upstream service: /info does not need one, and the test stays short.
    env = {**ENV, "PYTHON": "3.13", "PORT": str(port), "UPSTREAM_URL": "http://127.0.0.1:9"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "serve", "starlette"],
        cwd=ROOT,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # until the lab says it serves (or ends: EOF)
            lines.append(line)
            if "Ctrl-C stops" in line:
                break
        assert "Python 3.13." in "".join(lines), lines
        status, body = server.get_json(f"http://127.0.0.1:{port}/info", timeout=5)
        assert status == 200
        assert body["language_version"].startswith("3.13.")
        assert body["gil_enabled"] is True
    finally:
        proc.send_signal(signal.SIGTERM)  # the lab stops its server in order
        proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert not server.port_in_use(port)
