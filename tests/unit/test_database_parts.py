"""The database server's pure parts (lab/proc/database.py): the world table's formula and its
test vectors (CONTRACT.md, "The database"), the pool check, the command line and settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.proc import database
from lab.proc.database import (
    SETTINGS,
    Database,
    DatabaseUnavailable,
    pool_fits,
    random_number,
    world_check,
    world_rows,
)

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# The vectors CONTRACT.md gives: any server seeded by the lab holds exactly these rows.
FIRST_ROWS = [(1, 8045), (2, 9958), (3, 7512), (4, 7277), (5, 656)]
CHECK = (10_000, 49_653_924, "7430762357fa849b6ada84ac01691c15")


def test_world_rows_match_the_vectors() -> None:
    rows = world_rows()
    assert rows[:5] == FIRST_ROWS
    assert rows[-1] == (10_000, 9152)
    assert world_check(rows) == CHECK
    assert [i for i, _ in rows] == list(range(1, 10_001))
    assert all(1 <= r <= 10_000 for _, r in rows)


def test_the_formula_is_splitmix64() -> None:
    """SplitMix64's published first output for seed 0 is 0xE220A8397B1DCDAF: the formula
    is that generator, so any language's SplitMix64 gives the same rows."""
    assert random_number(1, seed=0) == 1 + 0xE220A8397B1DCDAF % 10_000
    assert random_number(1) == 8045  # seed 20
    assert world_rows(3, seed=0) != world_rows(3)  # the seed matters


def test_world_check_is_what_the_sql_computes() -> None:
    """md5 of "id,randomnumber" lines joined by a newline, as string_agg(..., E'\\n') does."""
    rows = [(1, 5), (2, 17)]
    assert world_check(rows) == (2, 22, "963c2c70cc7c4343a28714075653117b")  # md5(b"1,5\n2,17")


def test_pool_fits_names_both_numbers() -> None:
    assert pool_fits(100, 4, 25) is None  # exactly full
    refusal = pool_fits(100, 4, 26)
    assert refusal is not None and "\n" not in refusal
    assert "4 × 26 = 104" in refusal and "max_connections = 100" in refusal
    assert pool_fits(100, 4, 25, reserved=1) is not None  # the lab's own connection
    assert "1 of them taken" in (pool_fits(100, 4, 25, reserved=1) or "")
    assert pool_fits(200, 1, 199, reserved=1) is None


def test_every_setting_is_on_the_command_line(tmp_path: Path) -> None:
    db = Database(tmp_path, cpus=[1], max_connections=50, port=5999)
    db.user = None
    command = db.command(Path("/pg/bin"))
    assert command[0].endswith("taskset") and command[1:3] == ["-c", "1"]  # as the upstream is
    options = [command[i + 1] for i, arg in enumerate(command) if arg == "-c" and i > 2]
    assert options == [f"{k}={v}" for k, v in db.settings.items()]
    assert "max_connections=50" in options and "fsync=off" in options
    assert command[command.index("-p") + 1] == "5999"
    assert command[command.index("-D") + 1] == str(tmp_path / "data")
    assert set(SETTINGS) == set(db.settings)


def test_as_root_postgres_runs_as_nobody_with_the_parent_death_signal(tmp_path: Path) -> None:
    """A change of user clears the parent-death signal (prctl(2)): setpriv sets it after."""
    db = Database(tmp_path)
    db.user = ("nobody", 65534, 65534)
    command = db.command(Path("/pg/bin"))
    drop = command[: command.index("/pg/bin/postgres")]
    assert drop[0].endswith("setpriv")
    assert drop.index("--reuid=65534") < drop.index("--pdeathsig")
    assert drop[drop.index("--pdeathsig") + 1] == "KILL"


def test_display_url_hides_the_password() -> None:
    shown = database.display_url("postgresql://lab:secret@db.example:5433/bench")
    assert shown == "postgresql://lab@db.example:5433/bench"
    shown = database.display_url("host=db.example password=secret user=lab")
    assert "secret" not in shown and "db.example" in shown
    assert database.display_url("postgresql://lab@h/db") == "postgresql://lab@h/db"


def test_missing_binaries_say_run_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DatabaseUnavailable, match="just setup"):
        database.bin_dir()


# --- what the runner makes of them ------------------------------------------------------------


def _server(max_connections: int) -> Database:
    """A Database as _inspect leaves it: its settings read, the lab's own connection taken."""
    db = Database()
    db.server = {"settings": {"max_connections": str(max_connections)}}
    return db


def test_the_runner_counts_both_pools_when_they_are_two_drivers() -> None:
    """asyncpg's pool for /db and psycopg's for /db-blocking: each worker opens both."""
    from lab.run.runner import pool_refusal

    two = {"driver": "asyncpg 0.30", "pool": 10, "blocking_driver": "psycopg 3.2",
           "blocking_pool": 4}  # fmt: skip
    db = _server(100)
    assert pool_refusal(db, {"workers": 7, "database": two}) is None  # 7 x 14 = 98 <= 99
    refusal = pool_refusal(db, {"workers": 8, "database": two})
    assert refusal and "8 × 14 = 112" in refusal and "max_connections = 100" in refusal
    # one driver for both (Go, Flask): one pool
    one = {**two, "blocking_driver": "asyncpg 0.30"}
    assert pool_refusal(db, {"workers": 9, "database": one}) is None  # 9 x 10 = 90
    assert "11 × 10 = 110" in (pool_refusal(db, {"workers": 11, "database": one}) or "")
    # a server that states no pools (a target without the database endpoints): no refusal
    assert pool_refusal(db, {"workers": 500}) is None
    assert pool_refusal(db, {"workers": 500, "database": {"pool": "many"}}) is None


def test_a_dead_database_is_named_in_the_cells_problems(tmp_path: Path) -> None:
    """By the postmaster's pid and how it ended; util-linux 2.38's unshare (the PID namespace)
    exits 1 for a postmaster killed by a signal, after saying so in the log."""
    import subprocess

    from lab.run.runner import CellFacts, cell_problems, database_death

    db = Database(tmp_path)
    assert database_death(db) == ""  # never started
    db.proc = subprocess.Popen(["sh", "-c", "kill -9 $$"])
    db.proc.wait()
    db.postmaster = 4242
    died = database_death(db)
    assert died == "the database (pid 4242) was killed by SIGKILL during the cell"
    facts = CellFacts(budget_s=5, k6_exit=0, summary=True, requests=10, failed_requests=90,
                      failures="503×90", database=died)  # fmt: skip
    assert cell_problems(facts)[0] == died
    # in a namespace, unshare's own words in the log
    db.proc = subprocess.Popen(["sh", "-c", "exit 1"])
    db.proc.wait()
    db.namespace = ["unshare"]
    assert database_death(db) == "the database (pid 4242) exited with 1 during the cell"
    (tmp_path / "postgres.log").write_text(f"{database.UNSHARE_SIGNALED}: Invalid argument\n")
    assert database_death(db) == "the database (pid 4242) was killed by a signal during the cell"
