"""The database server end to end (lab/proc/database.py, issue 20): the embedded PostgreSQL
starts, holds the world table of the vectors, waits as asked, stops leaving nothing; a kill -9
of a runner-like parent leaves no postgres process; a --db-url server is used, not started
or stopped; an unreachable one is one line."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from lab import ROOT
from lab.proc import database, server
from lab.proc.database import (
    WORLD_CHECK_SQL,
    Database,
    DatabaseUnavailable,
    pid_namespace,
    world_check,
    world_rows,
)

pytestmark = pytest.mark.e2e  # the test's kind: just test-e2e

CHECK = world_check(world_rows())
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder the server's user reaches (pytest's tmp_path is closed to others: when the
    lab runs as root, postgres runs as nobody)."""
    path = Path(tempfile.mkdtemp(prefix="lab-db-test-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still running (not zombies) after up to `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.mark.parametrize("namespace", [True, False], ids=["pid-namespace", "no-namespace"])
def test_start_world_wait_stop(
    folder: Path, monkeypatch: pytest.MonkeyPatch, namespace: bool
) -> None:
    if not namespace:  # as where the kernel refuses one (a container without CAP_SYS_ADMIN)
        monkeypatch.setattr(database, "pid_namespace", lambda: [])
    cpu = sorted(os.sched_getaffinity(0))[-1]
    db = Database(folder / "run", cpus=[cpu], max_connections=50)
    try:
        db.start()
        info = db.info()
        assert info["pid_namespace"] == (namespace and bool(pid_namespace()))
        assert info["kind"] == "embedded" and info["started"]
        assert info["server_version"].startswith("18.")
        for name, value in db.settings.items():  # every setting took effect
            assert info["settings"][name] == value, name
        assert info["world"]["seeded"] and info["world"]["matches"]
        with db.connect() as conn:
            count, total, md5 = conn.execute(WORLD_CHECK_SQL).fetchone()  # type: ignore[misc]
            assert (count, total, md5) == CHECK
            started = time.monotonic()
            conn.execute("SELECT pg_sleep(0.1)")
            assert time.monotonic() - started >= 0.1
        tree = db.tree()
        assert len(tree) >= 3
        for p in tree:  # the server, every backend and helper: pinned like the upstream
            # (the backend of the connection just closed may end between the listing and here)
            with contextlib.suppress(psutil.NoSuchProcess):
                assert p.cpu_affinity() == [cpu], p.cmdline()
        refusal = db.check_pool(10, 5)  # 50 > 50 - 1 (the lab's own connection)
        assert refusal and "10 × 5 = 50" in refusal and "max_connections = 50" in refusal
        assert db.check_pool(7, 7) is None
    finally:
        report = db.stop()
    assert report.clean, report
    assert report.seconds < 3, report
    assert not gone([p.pid for p in tree], 0)
    assert not server.port_in_use(db.port)
    assert not (folder / "run" / "data").exists()
    assert "database system is shut down" in (folder / "run" / "postgres.log").read_text()


def test_external_url_is_used_not_started(folder: Path) -> None:
    theirs = Database(folder / "theirs").start()
    try:
        with theirs.connect() as conn:
            conn.execute("DROP TABLE world")
        ours = Database.external(theirs.url)
        info = ours.info()
        assert info["kind"] == "external" and not info["started"] and not info["pinned"]
        assert info["world"]["seeded"] and info["world"]["matches"]  # it was missing
        assert info["version"] == theirs.info()["version"]
        assert ours.max_connections == 200
        again = Database.external(theirs.url).info()
        assert not again["world"]["seeded"] and again["world"]["matches"]  # found, left as is
        report = ours.stop()
        assert report.exit_code is None and not report.leftover
        assert theirs.alive()  # nothing of theirs was stopped
        with theirs.connect() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        assert theirs.stop().clean


def test_unreachable_url_is_one_line() -> None:
    url = f"postgresql://lab:secret@127.0.0.1:{server.free_port()}/postgres"
    with pytest.raises(DatabaseUnavailable) as caught:
        Database.external(url)
    message = str(caught.value)
    assert "\n" not in message and "unreachable" in message and "secret" not in message
    done = subprocess.run(
        [sys.executable, "-m", "lab.proc.database", "--db-url", url],
        cwd=ROOT, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_by_hand_ctrl_c_stops_it() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab.proc.database"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        out = _read_until(proc, "Ctrl-C stops", 30)
        info = json.loads(out[: out.rindex("}") + 1])
        pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert b"clean" in proc.stderr.read()  # type: ignore[union-attr]
        assert not gone(pids, 0)
        assert not Path(info["data_dir"]).parent.exists()  # the temporary folder, whole
        assert not server.port_in_use(info["port"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


# --- kill -9 of the runner ---------------------------------------------------------------------

PARENT = """
import json, sys, time
from pathlib import Path
from lab.proc import children, database
folder, supervise, namespace = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1"
if supervise:
    children.set_session(children.Session("db-test", folder).start())
if not namespace:
    database.pid_namespace = lambda: []
db = database.Database(folder / "run").start()
print(json.dumps({"url": db.url, "port": db.port, "data": str(db.data_dir),
                  "namespace": bool(db.namespace)}), flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize(
    "how", ["supervisor", "parent-death-signal", "as-another-user", "supervisor-no-namespace"]
)
def test_kill_9_of_the_runner_leaves_no_postgres(folder: Path, how: str) -> None:
    """supervisor: as in a run. parent-death-signal: without one (python -m lab.proc.database).
    as-another-user: the lab run by an ordinary user (postgres then runs as that user).
    supervisor-no-namespace: where the kernel refuses a PID namespace, the backends end by
    themselves once the postmaster is gone (those in a wait: the lab's endpoints' kind)."""
    prefix: list[str] = []
    if how == "as-another-user":
        if os.geteuid() != 0:
            pytest.skip("runs the lab as nobody, which needs root")
        shutil.chown(folder, "nobody", "nogroup")
        prefix = AS_NOBODY
    supervise = "1" if how.startswith("supervisor") else "0"
    namespace = "0" if how.endswith("no-namespace") else "1"
    # "lab bench" in its command line: a run starting meanwhile takes this parent for the live
    # runner it is (children.orphans), not for a dead one whose tagged children it must end.
    parent = subprocess.Popen(
        [*prefix, sys.executable, "-c", PARENT, str(folder), supervise, namespace, "lab", "bench"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    holders: list[threading.Thread] = []
    try:
        meta = json.loads(_read_until(parent, "}", 30))
        # Backends that are busy when the runner dies: waiting, and (where the server has a
        # PID namespace of its own) in the middle of a CPU-bound statement.
        queries = ["SELECT pg_sleep(60)"]
        if meta["namespace"]:
            queries.append("SELECT count(*) FROM generate_series(1, 10000000000)")
        for sql in queries:
            holders.append(threading.Thread(target=_hold, args=(meta["url"], sql), daemon=True))
            holders[-1].start()
        idle = psycopg.connect(meta["url"], autocommit=True)
        _wait_active(meta["url"], len(queries))
        pids = [p.pid for p in psutil.Process(parent.pid).children(recursive=True)]
        assert len(pids) >= 5 + len(queries)
        parent.kill()
        parent.wait(5)
        left = gone(pids, 3.0)
        assert not left, [psutil.Process(p).cmdline() for p in left if psutil.pid_exists(p)]
        assert not server.port_in_use(meta["port"])
        idle.close()
        if supervise == "1":  # the supervisor knew the server's group
            assert " postgres" in (folder / "processes.log").read_text()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(5)
    for t in holders:
        t.join(5)


def _hold(url: str, sql: str) -> None:
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)
    except psycopg.Error:
        pass  # the server was killed under it: expected


def _wait_active(url: str, n: int) -> None:
    deadline = time.monotonic() + 10
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchone()
            if row and row[0] >= n:
                return
            time.sleep(0.05)
    raise AssertionError(f"{n} queries did not start")


def _read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> str:
    """stdout up to `marker` (read from the pipe itself: a buffered readline could hold the
    marker while select() sees nothing more), waiting at most `timeout` s."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while marker.encode() not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise AssertionError(f"no {marker!r} within {timeout} s: {data!r}")
            chunk = os.read(fd, 65536)
            if not chunk:
                err = proc.stderr.read() if proc.stderr else b""
                raise AssertionError(f"exited with {proc.wait(5)}: {data!r} {err!r}")
            data += chunk
    return data.decode()


def test_a_pid_namespace_is_used_where_the_kernel_allows() -> None:
    """Recorded either way; here it is known to work when unshare runs at all."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True,
                           check=False, timeout=5)  # fmt: skip
    if os.geteuid() == 0 and probe.returncode == 0:
        assert pid_namespace()
