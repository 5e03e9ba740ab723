"""`lab serve TARGET [PROFILE]` (`just serve`): one target, the upstream service and a database
in the foreground until Ctrl-C, on the ports of PORT and UPSTREAM_PORT (or an UPSTREAM_URL of
your own); the database is an embedded PostgreSQL on a free port (its URL in the banner), or
yours with --db-url. A bad port, a busy port, an unknown interpreter, a missing or unreachable
database is one line and exit 2, before anything starts. Ctrl-C stops the three at once, so
that a request in flight delays the end by the target's own stop alone."""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from lab import interpreters
from lab.arguments import add_command, port_number
from lab.errors import UsageError
from lab.proc import interrupt, server
from lab.proc.database import Database, bin_dir, display_url, run_as
from lab.proc.server import ProcessWithLog
from lab.targets import find


def _env_port(name: str, default: str) -> int:
    """A port from the environment; the check is --port's, the message names the variable."""
    raw = os.environ.get(name, default)
    try:
        return port_number(raw)
    except argparse.ArgumentTypeError:
        raise UsageError(f"{name} must be a port number (1-65535), got {raw!r}") from None


def _database(url: str | None) -> Database:
    """--db-url's server (connected to now: one line if it cannot be), or the embedded one,
    not started yet (its binaries checked now), in a temporary folder removed at its stop."""
    if url:
        return Database.external(url)
    bin_dir()
    run_as()
    return Database()


def _stop_all(processes: list[ProcessWithLog]) -> None:
    """Stop them at once (each stop is bounded): the end takes the longest of them, not their
    sum. The database's fast shutdown ends the queries of requests still in flight, which
    the target then answers with a 503 instead of holding its own stop."""
    with ThreadPoolExecutor(len(processes) or 1) as pool:
        list(pool.map(lambda p: p.stop(), processes))


def cmd_serve(args: argparse.Namespace) -> int:
    """Run one target (with the upstream service and a database) in the foreground on
    $HOST:$PORT (default 127.0.0.1:8000; upstream on $UPSTREAM_PORT, default 8001, unless
    $UPSTREAM_URL is set; an embedded PostgreSQL on a free port, unless --db-url names yours).
    Knobs: WORKERS, THREADS, EXECUTOR_THREADS, POOL_PROCESSES, DB_POOL. PYTHON=3.13 serves a
    Python target on that interpreter (`python -m lab.interpreters` lists the ones set up)."""
    target = find(args.target)
    profile = target.profile(args.profile)
    python = os.environ.get("PYTHON", "") if target.language == "python" else ""
    env = interpreters.find(python) if python else None  # PYTHON=3.13 just serve ...
    host = os.environ.get("HOST", server.HOST)
    port = _env_port("PORT", "8000")
    upstream_url = os.environ.get("UPSTREAM_URL", "")
    upstream = None
    if not upstream_url:
        upstream = server.upstream_server(_env_port("UPSTREAM_PORT", "8001"), host)
    for p in [port] + ([upstream.port] if upstream else []):
        if server.port_in_use(p, host):
            raise UsageError(f"port {p} on {host} is already in use (set PORT / UPSTREAM_PORT)")
    db = _database(args.db_url)
    app: server.ServerProcess | None = None
    # SIGTERM ends us like Ctrl-C does, so both paths stop everything.
    with interrupt.handling():
        try:
            if upstream:
                upstream.start()
                upstream_url = upstream.url
            db.start()
            app = server.target_server(
                target,
                profile.name,
                port=port,
                host=host,
                upstream_url=upstream_url,
                env={"DATABASE_URL": db.url},  # ours, never one from the shell
                bin_dir=env.bin_dir if env else None,
            )
            app.start(show_output=True)
            py = f", Python {env.version}" if env else ""
            database = db.url if db.embedded else f"yours, {display_url(db.url)}"
            where = f"{app.url}{py} (upstream {upstream_url}, database {database})"
            print(f"{target.name}/{profile.name} on {where}; Ctrl-C stops", flush=True)
            while app.alive():  # polled, not Popen.wait(): see lab/proc/interrupt.py
                time.sleep(0.2)
            print(f"{target.name} exited with {app.proc.returncode}", file=sys.stderr)  # type: ignore[union-attr]
            return 1
        except KeyboardInterrupt:
            return 0
        finally:
            with interrupt.shielded():
                _stop_all([p for p in (app, upstream, db) if p is not None])


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(sub, "serve", cmd_serve, "run one target in the foreground")
    p.add_argument("target", help="target name (folder name, or an alias such as 'go')")
    p.add_argument("profile", nargs="?", help="server profile (default: the target's default)")
    p.add_argument(
        "--db-url",
        metavar="URL",
        help="the target queries your PostgreSQL at this URL instead of an embedded one",
    )
