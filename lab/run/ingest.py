"""`lab ingest DIR`: the outputs of k6 instances that ran one cell in execution segments
elsewhere (the k6-operator's runners, collected with kubectl cp; or any k6 run with
segments.k6_args) become a normal run folder with one row, merged exactly by segments.merge.

DIR holds, anywhere below it, each instance's handleSummary JSON (lab.js's SUMMARY: any
*.json with `metrics` and `lab`) and its samples (k6's CSV output: *.csv or *.csv.gz), as many
of one as of the other; `lab k6-operator`'s cell.json, in DIR or its parent, names the target
(else --target). The row has no prediction: the model's calibration needs the server at hand,
so its verdict is the model's for a row without one ("no model")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lab import arguments
from lab.errors import UsageError
from lab.matrix import Cell
from lab.record import CellResult, utc_now
from lab.run import loadgen, segments
from lab.run.k6operator import CELL_JSON
from lab.run.runner import Options, judge, summary_table
from lab.rundir import RESULTS_DIR, RunDir
from lab.targets import UnknownChoice, find

LAYOUT = (
    "each instance's summary JSON (lab.js's SUMMARY) and samples file (*.csv.gz), "
    "e.g. DIR/RUNNER/summary.json and DIR/RUNNER/samples.csv.gz"
)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not readable as JSON ({exc})") from None


def outputs(folder: Path) -> tuple[list[dict[str, Any]], list[Path]]:
    """The instances' summaries and samples files below `folder` (names do not matter)."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder (expected {LAYOUT})")
    summaries = []
    for path in sorted(folder.rglob("*.json")):
        data = _read_json(path)
        if (
            isinstance(data, dict)
            and isinstance(data.get("metrics"), dict)
            and isinstance(data.get("lab"), dict)
        ):
            summaries.append(data)
        elif path.name != CELL_JSON:
            raise UsageError(f"{path}: not a k6 summary of k6/lab.js (no metrics and lab)")
    samples = sorted(p for p in folder.rglob("*") if p.name.endswith((".csv", ".csv.gz")))
    if not summaries:
        raise UsageError(f"no k6 summary in {folder} (expected {LAYOUT})")
    if len(samples) != len(summaries):
        raise UsageError(
            f"{folder} holds {len(summaries)} summaries but {len(samples)} samples files "
            f"(expected {LAYOUT})"
        )
    first = summaries[0]["lab"]
    if any(s["lab"] != first for s in summaries[1:]):
        raise UsageError(f"the summaries in {folder} are of different cells (their `lab` differ)")
    return summaries, samples


def _cell_json(folder: Path) -> dict[str, Any] | None:
    for place in (folder / CELL_JSON, folder.parent / CELL_JSON):
        if place.is_file():
            data = _read_json(place)
            if not isinstance(data, dict) or not isinstance(data.get("cell"), dict):
                raise UsageError(f"{place}: not a cell.json written by `lab k6-operator`")
            return data
    return None


def cell_of(lab: dict[str, Any], folder: Path, target: str | None) -> Cell:
    """The cell the instances ran: what their summaries say (lab.js's `lab`), on the target
    --target or cell.json names."""
    written = _cell_json(folder)
    profile = ""
    if target is None and written is not None:
        target, profile = written["cell"].get("target"), written["cell"].get("profile", "")
        ran = {k: lab.get(k) for k in ("endpoint", "params", "vus", "rate", "duration")}
        wrote = {k: written["cell"].get(k) for k in ran}
        if ran != wrote:
            raise UsageError(
                f"{CELL_JSON} describes another cell than the summaries: {wrote} vs {ran}"
            )
    if not target:
        raise UsageError(
            f"which target served {folder}? pass --target NAME "
            f"(or keep the {CELL_JSON} `lab k6-operator` wrote beside the outputs)"
        )
    try:
        known = find(target)
        target, profile = known.name, profile or known.default_profile
    except UnknownChoice:
        profile = profile or "remote"  # a server of the user's own: named as given
    try:
        return Cell(
            target,
            profile,
            str(lab["endpoint"]),
            tuple((str(k), int(v)) for k, v in dict(lab.get("params") or {}).items()),
            int(lab["vus"]),
            int(lab["rate"]) if lab.get("rate") else None,
            str(lab["duration"]),
            1,
            iterations=int(lab["iterations"]) if lab.get("iterations") else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"the summaries' `lab` lacks what the cell needs ({exc})") from None


def row_of(cell: Cell, summaries: list[dict[str, Any]], samples: list[Path]) -> CellResult:
    """The cell's row: the merged load columns; no prediction, so no model verdict."""
    try:
        merged = segments.merge(summaries, samples)
    except segments.SamplesError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, TypeError, AttributeError) as exc:  # a summary's values of odd types
        raise UsageError(f"a k6 summary's metrics are malformed ({exc!r})") from None
    durations = [
        s.get("state", {}).get("testRunDurationMs")
        for s in summaries
        if isinstance(s.get("state"), dict)
    ]
    measured = [d / 1000.0 for d in durations if isinstance(d, int | float)]
    row = CellResult.for_cell(
        cell,
        measured_s=max(measured) if measured else None,
        status="ok",
        loadgens=len(summaries),  # the runners the cell's load was split into
        started_at=utc_now(),
    )
    row.update(**merged)
    judge(row)
    return row


def cmd_ingest(args: argparse.Namespace) -> int:
    """Make the collected outputs of k6 instances that ran one cell in execution segments
    (the k6-operator's runners: see README) a run with one row: counts added, throughput
    summed, percentiles from all the requests' samples merged. The row has no prediction
    (verdict 'no model'): the model's calibration needs the server at hand."""
    folder = args.dir.resolve()
    summaries, samples = outputs(folder)
    lab = summaries[0]["lab"]
    cell = cell_of(lab, folder, args.target)
    row = row_of(cell, summaries, samples)
    base = args.out or RESULTS_DIR
    try:
        run = RunDir.create(base)
    except OSError as exc:
        raise UsageError(f"cannot write results to {base}: {exc.strerror or exc}") from None
    row.run_id = run.run_id
    matrix = {"name": "ingest", "source": str(folder), "loadgens": len(summaries), "lab": lab}
    options = Options(url=lab.get("base_url")).to_json()
    meta = run.start([cell], matrix, args.argv, options, {}, loadgen.binary())
    run.append(row)
    run.finish(meta, "complete", {}, [])
    run.point_latest()
    print(summary_table([row]))
    print(f"\n{len(summaries)} instances merged; results: {run.csv_path}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = arguments.add_command(
        sub, "ingest", cmd_ingest, "make k6 instances' collected outputs a run (one row)"
    )
    p.add_argument("dir", type=Path, help=f"the folder of the outputs: {LAYOUT}")
    p.add_argument("--target", help="the target that served the load (default: cell.json's)")
    p.add_argument("--out", type=Path, help="results folder (default results/)")
