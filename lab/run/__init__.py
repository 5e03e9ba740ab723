"""Running cells: bench.py (the bench and bench-all commands), serve.py (`lab serve`: one
target in the foreground), runner.py (the run and one cell in stages), calibrate.py (the
model's inputs), loadgen.py (k6), progress.py, folder.py (a run's folder: created, resumed,
appended to, finished and read back only here)."""
