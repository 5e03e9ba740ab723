"""The lab's command line (what the justfile calls). User mistakes end with one line on
stderr and exit status 2; nothing is started before the arguments are known to be good."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from lab import server
from lab.contract import load
from lab.targets import UnknownChoice, discover, find

USAGE_ERROR = 2


class UsageError(Exception):
    """A mistake in what the user asked for."""


def _port(raw: str, what: str) -> int:
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise UsageError(f"{what} must be a port number (1-65535), got {raw!r}")
    return int(raw)


def cmd_targets(args: argparse.Namespace) -> int:
    contract = load()
    for t in discover():
        alias = f" (alias: {', '.join(t.aliases)})" if t.aliases else ""
        print(f"{t.name}{alias}  [{t.language}, {t.framework}]")
        for p in t.profiles.values():
            mark = "*" if p.name == t.default_profile else " "
            print(f"  {mark} {p.name:<10} {p.description}")
    print(f"\nendpoints (contract v{contract.version}):")
    for e in contract.endpoints:
        params = ", ".join(f"{p.name}={p.default} [{p.minimum}..{p.maximum}]" for p in e.params)
        print(f"  {e.path:<14} {params:<48} {e.summary}")
    print("\n* = default profile")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """Build every target that has a build step (found from manifests) and the upstream."""
    for t in discover():
        if t.build:
            server.run_build(tuple(server.fill(p, t) for p in t.build), t.folder)
            print(f"built {t.name}")
    server.build_upstream()
    print("built upstream")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    target = find(args.target)
    profile = target.profile(args.profile)
    host = os.environ.get("HOST", server.HOST)
    port = _port(os.environ.get("PORT", "8000"), "PORT")
    upstream_url = os.environ.get("UPSTREAM_URL", "")
    upstream = None
    if not upstream_url:
        upstream_port = _port(os.environ.get("UPSTREAM_PORT", "8001"), "UPSTREAM_PORT")
        upstream = server.upstream_server(upstream_port, host)
    for p in [port] + ([upstream.port] if upstream else []):
        if server.port_in_use(p, host):
            raise UsageError(f"port {p} on {host} is already in use (set PORT / UPSTREAM_PORT)")
    if upstream:
        upstream.start()
        upstream_url = upstream.url
    app = server.target_server(
        target, profile.name, port=port, host=host, upstream_url=upstream_url
    )
    # SIGTERM ends us like Ctrl-C does, so both paths stop the servers in order.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        app.start(show_output=True)
        print(f"{target.name}/{profile.name} on {app.url} (upstream {upstream_url}); Ctrl-C stops")
        app.proc.wait()  # type: ignore[union-attr]
        print(f"{target.name} exited with {app.proc.returncode}", file=sys.stderr)  # type: ignore[union-attr]
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        app.stop()
        if upstream:
            upstream.stop()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="lab",
        description="Concurrency lab: equivalent servers under one contract, measured with k6.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("targets", help="list targets, their profiles and the contract's endpoints")
    p.set_defaults(run=cmd_targets)
    p = sub.add_parser("build", help="build every target that needs it, and the upstream")
    p.set_defaults(run=cmd_build)
    p = sub.add_parser(
        "serve",
        help="run one target in the foreground",
        description="Run one target (and the upstream service) in the foreground on "
        "$HOST:$PORT (default 127.0.0.1:8000; upstream on $UPSTREAM_PORT, default 8001, "
        "unless $UPSTREAM_URL is set). Knobs: WORKERS, THREADS, EXECUTOR_THREADS, "
        "POOL_PROCESSES.",
    )
    p.add_argument("target", help="target name (folder name, or an alias such as 'go')")
    p.add_argument("profile", nargs="?", help="server profile (default: the target's default)")
    p.set_defaults(run=cmd_serve)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (UsageError, UnknownChoice) as exc:
        print(f"lab: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return USAGE_ERROR
    except server.ServerError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 1
