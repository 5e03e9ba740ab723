"""The concurrency lab's runner, one layer a package (`ls lab/*/` shows the structure):

    lab/            the vocabulary every layer shares: contract (endpoints, bounds), targets
                    (manifests), matrix (cells), model (the capacity model and its verdict),
                    record (a run's two records: a result row, run.json), interpreters
                    (Python environments), errors (a user mistake), arguments (add_command
                    and the options' value types); cli.py dispatches the commands: each is
                    registered (add_parser, with add_command) by the module that owns it
    lab/proc/       process plumbing: start, watch, sample and stop servers and k6, and leave
                    nothing behind (children, supervisor, interrupt, runlock, server,
                    database: the PostgreSQL, probe)
    lab/run/        running cells: bench (bench, bench-all), serve, runner (one cell in
                    stages), calibrate, loadgen (k6), progress, folder (a run's folder: its
                    one owner)
    lab/report/     reading runs back: the report, charts, compare, published posts (reproduce)
    lab/tools/      the lab's own upkeep: new-target (scaffold), docs (generated README tables)

A layer imports only from the layers above it in this list (report reads run.folder, and
posts.py's `lab reproduce` runs run.bench).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
