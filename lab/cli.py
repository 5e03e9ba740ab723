"""The lab's command line (what the justfile calls): the parser and the small commands; the
benchmark itself is lab/run/bench.py. User mistakes end with one line on stderr and exit status
2; nothing is started before the arguments are known to be good."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from lab import interpreters
from lab.contract import load
from lab.errors import USAGE_ERROR, UsageError
from lab.matrix import MatrixError, load_matrix, names, parse_duration
from lab.proc import interrupt, runlock, server
from lab.run import bench, loadgen
from lab.run.folder import RunDir, mark_if_died, resolve
from lab.targets import UnknownChoice, discover, find
from lab.tools import docs, scaffold


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
    python = os.environ.get("PYTHON", "") if target.language == "python" else ""
    env = interpreters.find(python) if python else None  # PYTHON=3.13 just serve ...
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


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers like 10 or 1,10,50, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def _port_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 1-65535, got {text!r}")
    return int(text)


def _non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return int(text)


def _duration(text: str) -> str:
    try:
        if parse_duration(text) <= 0:
            raise MatrixError("duration must be positive")
    except MatrixError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Re-run a published post's experiment; without a name, list the posts."""
    from lab.report import posts

    if args.post is None:
        print("posts the lab re-creates (just reproduce POST):")
        for name in posts.posts():
            matrix = load_matrix(name)
            post = posts.post_of(matrix)
            claims = len(posts.claims_of(matrix))
            print(f"  {name:<14} {post.citation}: {len(matrix.cells)} cells, {claims} figures")
        return 0
    matrix = posts.load_post(args.post)
    posts.claims_of(matrix)  # a broken post file: one line before anything starts
    argv = ["bench-all", "--matrix", args.post]
    for flag, value in (("--repeat", args.repeat), ("--out", args.out), ("--port", args.port)):
        argv += [flag, str(value)] if value is not None else []
    argv += ["--no-pin"] if args.no_pin else []
    argv += ["--allow-concurrent"] if args.allow_concurrent else []
    bench_args = parser().parse_args(argv)  # the same options, defaults and checks as bench-all
    return bench.run(bench_args, all_targets=True, argv=argv)


def cmd_report(args: argparse.Namespace) -> int:
    from lab import report

    try:
        path = resolve(args.run_id)
        mark_if_died(RunDir(path))  # a `running` run whose runner is gone says `died`
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(f"{args.run_id}: run.json is not readable ({exc})") from None
    out = report.build(path)
    print(f"report: {out}\nsummary: {path / 'summary.md'}\ncharts: {path / 'charts'}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from lab.report import compare

    try:
        a, b = (resolve(r) for r in (args.run_a, args.run_b))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(compare.table(compare.compare(a, b)))
    return 0


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", help="server profile: a name, 'default' or 'all'")
    p.add_argument("--vus", type=_int_list, help="virtual users (closed model), e.g. 50 or 1,10,50")
    p.add_argument("--duration", type=_duration, help="measured time per cell, e.g. 10s")
    p.add_argument("--ms", type=int, help="ms parameter of the endpoints that take it")
    p.add_argument("--n", type=int, help="n parameter of the endpoints that take it")
    p.add_argument("--rate", type=_int_list, help="open model: requests per second (list ok)")
    p.add_argument("--matrix", help=f"named matrix in k6/matrices ({', '.join(names())})")
    p.add_argument("--repeat", type=_positive, help="run every cell N times, interleaved")
    p.add_argument("--url", help="benchmark a running server at this URL (no local lifecycle)")
    p.add_argument("--allow-remote", action="store_true", help="let --url name a non-loopback host")
    p.add_argument("--out", type=Path, help="results folder (default results/)")
    p.add_argument("--resume", metavar="RUN", help="finish the missing cells of an earlier run")
    p.add_argument(
        "--port", type=_port_number, help="fixed port for the servers (default: a free one)"
    )
    p.add_argument(
        "--canary-rate", type=_non_negative, help="canary /hello requests per second (0: off)"
    )
    p.add_argument("--no-pin", action="store_true", help="do not pin server and k6 to CPUs")
    p.add_argument(
        "--allow-concurrent",
        action="store_true",
        help="run even if another run is using this machine (both measurements suffer)",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the cells and the time estimate, start nothing",
    )
    p.add_argument(
        "--python",
        metavar="X[,Y…]",
        help="run Python targets on each of these interpreters, e.g. 3.11,3.13 "
        "(set up by `just setup`; `python -m lab.interpreters` lists them)",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="lab",
        description="Concurrency lab: equivalent servers under one contract, measured with k6.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
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
        "POOL_PROCESSES. PYTHON=3.13 serves a Python target on that interpreter "
        "(`python -m lab.interpreters` lists the ones set up).",
    )
    p.add_argument("target", help="target name (folder name, or an alias such as 'go')")
    p.add_argument("profile", nargs="?", help="server profile (default: the target's default)")
    p.set_defaults(run=cmd_serve)
    p = sub.add_parser(
        "bench",
        help="benchmark one target x one endpoint",
        description="Benchmark one target x one endpoint: a fresh server per cell, pinned "
        "apart from k6, results in results/<run-id>/results.csv. Knobs such as WORKERS are "
        "read from the environment and recorded.",
    )
    p.add_argument("target", help="target name or alias (see 'just targets')")
    p.add_argument("endpoint", help="endpoint name from the contract, e.g. sync, cpu-pool")
    _bench_arguments(p)
    p.set_defaults(run=bench.run)
    p = sub.add_parser(
        "bench-all",
        help="benchmark the whole matrix (default: quick)",
        description="Benchmark a whole matrix: every discovered target x profile x endpoint "
        "(x VUs) of k6/matrices/NAME.toml, default 'quick'. Prints the cell count and the "
        "estimated time first, then a progress line per cell and a summary table.",
    )
    _bench_arguments(p)
    p.set_defaults(run=lambda a: bench.run(a, all_targets=True))
    p = sub.add_parser(
        "reproduce",
        help="re-run a published post's experiment (no name: list the posts)",
        description="Re-create a widely read post's experiment with the lab's endpoints and "
        "print, per published figure, what the post published, what this machine measures "
        "and what the capacity model predicts. The same as bench-all --matrix POST.",
    )
    p.add_argument("post", nargs="?", help="the post's name; omit it to list them")
    p.add_argument("--repeat", type=_positive, help="run every cell N times")
    p.add_argument("--out", type=Path, help="results folder (default results/)")
    p.add_argument("--port", type=_port_number, help="fixed port for the servers")
    p.add_argument("--no-pin", action="store_true", help="do not pin server and k6 to CPUs")
    p.add_argument(
        "--allow-concurrent",
        action="store_true",
        help="run even if another run is using this machine (both measurements suffer)",
    )
    p.set_defaults(run=cmd_reproduce)
    p = sub.add_parser(
        "report",
        help="write a run's report.html, charts and summary.md",
        description="Write report.html (one self-contained file that works offline), "
        "charts/*.png and summary.md into a run folder. bench-all does this at its end.",
    )
    p.add_argument(
        "run_id", nargs="?", default="latest", metavar="RUN", help="run id, 'latest', or a path"
    )
    p.set_defaults(run=cmd_report)
    p = sub.add_parser(
        "compare",
        help="compare two runs cell by cell",
        description="Per cell: the change in rps and p95 from RUN_A to RUN_B, and whether it "
        "exceeds the noise (repetitions' CV) measured in those runs.",
    )
    p.add_argument("run_a", help="run id under results/, 'latest', or a path")
    p.add_argument("run_b", help="run id under results/, 'latest', or a path")
    p.set_defaults(run=cmd_compare)
    scaffold.add_parser(sub)
    docs.add_parser(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (UsageError, UnknownChoice, MatrixError, loadgen.K6Missing, runlock.Busy) as exc:
        print(f"lab: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`lab targets | head -1`): what it wanted it has. Point stdout
        # at /dev/null so that the interpreter's last flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except server.ServerError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 1
