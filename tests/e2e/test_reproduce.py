"""`lab reproduce` of the smallest post for real: its figures measured, predicted and reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness.labrun import ENV, run_in_root  # ENV: the session's own run lock

from lab import ROOT
from lab.report import posts
from lab.rundir import read_run

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e


# --- one short real run --------------------------------------------------------------------


def test_reproduce_the_smallest_post_for_real(tmp_path: Path) -> None:
    """The smallest post with its first cell (16 one-second requests at once on 4 workers;
    the other two differ only in the endpoint): its own file, filtered, in a matrix folder of
    its own; the rest is `lab reproduce`. About 25 s on a loaded machine."""
    matrices, out = tmp_path / "matrices", tmp_path / "results"
    matrices.mkdir()
    text = (ROOT / "k6" / "matrices" / "flask-workers.toml").read_text()
    # keep the sync cell and its claims ([post] comes first in the file, then the [[...]])
    head, *blocks = text.split("\n[[")
    drop = ('"async-view"', '"two-tasks"')
    kept = [b for b in blocks if not any(f"cell = {d}" in b or f"name = {d}" in b for d in drop)]
    (matrices / "flask-workers.toml").write_text("\n[[".join([head, *kept]))
    script = (
        "import sys; from pathlib import Path; import lab.matrix; "
        "lab.matrix.MATRIX_DIR = Path(sys.argv[1]); from lab.cli import main; "
        "sys.exit(main(['reproduce', 'flask-workers', '--out', sys.argv[2]]))"
    )
    done = run_in_root([sys.executable, "-c", script, str(matrices), str(out)], ENV, 120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "published / measured here / predicted by the model" in done.stdout
    run = (out / "latest").resolve()
    meta = json.loads((run / "run.json").read_text())
    assert meta["knobs"]["WORKERS"] == "4"
    # an interrupted reproduction resumes as the bench-all it is
    assert meta["command"] == ["bench-all", "--matrix", "flask-workers", "--out", str(out)]
    assert next(iter(meta["servers"].values()))["workers"] == 4
    rep = posts.from_run(read_run(run))
    assert rep is not None
    got = {line.claim.id: line for line in rep.lines}
    assert set(got) == {"sync-all", "sync-staircase"}
    # 4 workers: 16 one-second requests in 4 rounds (1 worker would take 16 s, 8 workers 2 s)
    assert 3.9 <= got["sync-all"].measured <= 4.8  # type: ignore[operator]
    assert 2.4 <= got["sync-staircase"].measured <= 3.1  # type: ignore[operator]
    assert got["sync-all"].predicted == pytest.approx(4.0, rel=0.02)  # + measured overhead
    # a burst's mean answer is its staircase's, (1+2+3+4)/4 s, not a closed loop's N / X = 4 s
    assert got["sync-staircase"].predicted == pytest.approx(2.5, rel=0.02)
    summary = (run / "summary.md").read_text()
    assert "## Published claims" in summary
    assert '<section id="published">' in (run / "report.html").read_text()
