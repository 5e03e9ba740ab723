"""`lab serve TARGET [PROFILE]` (`just serve`): one target and the upstream service in the
foreground until Ctrl-C, on the ports of PORT and UPSTREAM_PORT (or an UPSTREAM_URL of your
own). A bad port, a busy port or an unknown interpreter is one line and exit 2, before
anything starts."""

from __future__ import annotations

import argparse
import os
import sys
import time

from lab import interpreters
from lab.arguments import add_command, port_number
from lab.errors import UsageError
from lab.proc import interrupt, server
from lab.targets import find


def _env_port(name: str, default: str) -> int:
    """A port from the environment; the check is --port's, the message names the variable."""
    raw = os.environ.get(name, default)
    try:
        return port_number(raw)
    except argparse.ArgumentTypeError:
        raise UsageError(f"{name} must be a port number (1-65535), got {raw!r}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    """Run one target (and the upstream service) in the foreground on $HOST:$PORT (default
    127.0.0.1:8000; upstream on $UPSTREAM_PORT, default 8001, unless $UPSTREAM_URL is set).
    Knobs: WORKERS, THREADS, EXECUTOR_THREADS, POOL_PROCESSES. PYTHON=3.13 serves a Python
    target on that interpreter (`python -m lab.interpreters` lists the ones set up)."""
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
    if upstream:
        upstream.start()
        upstream_url = upstream.url
    app = server.target_server(
        target,
        profile.name,
        port=port,
        host=host,
        upstream_url=upstream_url,
        bin_dir=env.bin_dir if env else None,
    )
    # SIGTERM ends us like Ctrl-C does, so both paths stop the servers in order.
    with interrupt.handling():
        try:
            app.start(show_output=True)
            py = f", Python {env.version}" if env else ""
            where = f"{app.url}{py} (upstream {upstream_url})"
            print(f"{target.name}/{profile.name} on {where}; Ctrl-C stops")
            while app.alive():  # polled, not Popen.wait(): see lab/proc/interrupt.py
                time.sleep(0.2)
            print(f"{target.name} exited with {app.proc.returncode}", file=sys.stderr)  # type: ignore[union-attr]
            return 1
        except KeyboardInterrupt:
            return 0
        finally:
            with interrupt.shielded():
                app.stop()
                if upstream:
                    upstream.stop()


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(sub, "serve", cmd_serve, "run one target in the foreground")
    p.add_argument("target", help="target name (folder name, or an alias such as 'go')")
    p.add_argument("profile", nargs="?", help="server profile (default: the target's default)")
