"""Running cells: bench.py (the bench and bench-all commands), reproduce.py (bench-all of a
published post), serve.py (`lab serve`: one target in the foreground), runner.py (the run and
one cell in stages), calibrate.py (the model's inputs), loadgen.py (k6), progress.py. A run's
folder is lab/rundir.py's (created, resumed, appended to, finished and read back only there)."""
