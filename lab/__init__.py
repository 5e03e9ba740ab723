"""The concurrency lab's runner, one layer a package (`ls lab/*/` shows the structure):

    lab/            the vocabulary every layer shares: contract (endpoints, bounds), targets
                    (manifests), matrix (cells), model (the capacity model and its verdict),
                    record (a result row), interpreters (Python environments), errors
                    (a user mistake); cli.py dispatches the commands
    lab/proc/       process plumbing: start, watch, sample and stop servers and k6, and leave
                    nothing behind (children, supervisor, interrupt, runlock, server, probe)
    lab/run/        running cells: bench (the commands), runner (one cell in stages),
                    calibrate, loadgen (k6), progress, folder (a run's folder: its one owner)
    lab/report/     reading runs back: the report, charts, compare, published posts
    lab/tools/      the lab's own upkeep: new-target (scaffold), docs (generated README tables)

A layer imports only from the layers above it in this list (report may read run.folder).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
