"""Process plumbing: every process the lab starts goes through children.py (its own group,
the supervisor that outlives a kill -9), server.py runs a server tree, database.py the
PostgreSQL the database endpoints wait on, sampler.py samples its CPU,
probe.py times requests, runlock.py keeps one run per machine, interrupt.py handles Ctrl-C."""
