"""The concurrency lab's runner, one layer a package (`ls lab/*/` shows the structure):

    lab/            the vocabulary every layer shares: contract (endpoints, bounds), targets
                    (manifests), capacities (CONTRACT.md's formulas), matrix (cells),
                    model (the capacity model and its verdict), record (a run's two
                    records: a result row, run.json), rundir (a run's
                    folder: its one owner, which creates, resumes, appends to, finishes and
                    reads it), interpreters (Python environments), errors (a user mistake),
                    arguments (add_command and the options' value types); cli.py dispatches
                    the commands: each is registered (add_parser) by the module that owns it
    lab/proc/       process plumbing: start, watch, sample and stop servers and k6, and leave
                    nothing behind (children, supervisor, interrupt, runlock, server,
                    database: the PostgreSQL, probe)
    lab/report/     reading runs back: the report, charts, compare, the published posts
    lab/run/        running cells: bench (bench, bench-all), reproduce (bench-all of a post),
                    serve, runner (one cell in stages), calibrate, loadgen (k6), segments
                    (k6 split by execution segments, merged exactly), k6operator and ingest
                    (a cell run elsewhere, in segments, back as a row), progress
    lab/tools/      the lab's own upkeep: new-target (scaffold), docs (generated README tables)

A layer imports only from the layers above it in this list, never from below
(tests/unit/test_layers.py): a run ends by building its report, a report never runs anything.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
