"""The lab's command line (what the justfile calls). User mistakes end with one line on
stderr and exit status 2; nothing is started before the arguments are known to be good."""

from __future__ import annotations

import argparse
import ipaddress
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from lab import children, docs, interpreters, interrupt, loadgen, runlock, scaffold, server
from lab.contract import load
from lab.matrix import Cell, Matrix, MatrixError, expand, load_matrix, names, parse_duration
from lab.model import MAX_CELL_S
from lab.progress import clock
from lab.results import RESULTS_DIR, RunDir, mark_if_died, resolve
from lab.runner import (
    OVERHEAD_ESTIMATE_S,
    Options,
    Runner,
    estimate_s,
    finish_run,
    resume_cells,
    runner_identity,
    start_run,
    summary_table,
)
from lab.targets import Profile, Target, UnknownChoice, discover, find

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
            while app.alive():  # polled, not Popen.wait(): see lab/interrupt.py
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


def _check_url(url: str, allow_remote: bool) -> dict:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise UsageError(f"--url must look like http://127.0.0.1:8000, got {url!r}")
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise UsageError(f"--url {host} is not a loopback address; add --allow-remote to load it")
    try:
        status, info = server.get_json(url.rstrip("/") + "/info", timeout=5)
    except OSError as exc:
        raise UsageError(f"cannot reach {url}: {exc}") from None
    if status != 200 or not isinstance(info, dict) or "capacity" not in info:
        raise UsageError(f"{url}/info did not answer with the contract's self-description")
    return info


def _matrix(args: argparse.Namespace, all_targets: bool) -> Matrix:
    if args.matrix:
        matrix = load_matrix(args.matrix)
    elif all_targets:
        matrix = load_matrix("quick")
    else:
        matrix = Matrix(name="bench", duration="10s", vus=[50])
    if matrix.cells:
        given = [f"--{f}" for f in ("profile", "vus", "duration", "rate", "ms", "n")
                 if getattr(args, f, None) is not None]  # fmt: skip
        if given or not all_targets:
            what = ", ".join(given) or "a single target"
            raise UsageError(f"matrix {matrix.name} fixes its cells' load: {what} cannot change it")
        if args.repeat is not None:
            matrix.repeat = args.repeat
        return matrix
    if not all_targets:
        matrix.targets = [find(args.target).name]
        contract = load()
        bench = [e.name for e in contract.bench_endpoints()]
        if args.endpoint not in bench:
            raise UnknownChoice("endpoint", args.endpoint, bench)
        matrix.endpoints = [args.endpoint]
    if args.profile:
        matrix.profiles = args.profile if args.profile in ("all", "default") else [args.profile]
    for field in ("vus", "duration", "repeat"):
        if getattr(args, field) is not None:
            setattr(matrix, field, getattr(args, field))
    if args.rate is not None:
        matrix.rates = list(args.rate)
    if args.python:
        matrix.python = interpreters.parse_labels(args.python)
    for name in ("ms", "n"):
        value = getattr(args, name)
        if value is not None:  # the command line wins over the matrix's per-endpoint tables
            matrix.params = {
                k: ({kk: vv for kk, vv in v.items() if kk != name} if isinstance(v, dict) else v)
                for k, v in matrix.params.items()
            }
            matrix.params[name] = value
    return matrix


def _targets_for(matrix: Matrix, info: dict | None) -> list[Target]:
    """The targets a matrix runs on: discovered ones, or the one behind --url."""
    if info is None:
        targets = discover()
        if isinstance(matrix.profiles, list):
            profile = matrix.profiles[0]
            if matrix.targets == "all":
                targets = [t for t in targets if profile in t.profiles]
                if not targets:
                    every = sorted({p for t in discover() for p in t.profiles})
                    raise UnknownChoice("profile", profile, ["all", "default", *every])
        return targets
    name, profile = str(info.get("target", "remote")), str(info.get("profile", "remote"))
    matrix.targets, matrix.profiles = [name], "default"
    return [
        Target(
            name,
            Path("."),
            str(info.get("language", "")),
            str(info.get("framework", "")),
            profile,
            {profile: Profile(profile, "remote server", ())},
        )
    ]


def _apply_env(env: dict[str, str]) -> None:
    """A matrix's knobs (a post's WORKERS=4) for every server of the run; recorded in
    run.json's knobs like any knob from the shell."""
    for name, value in env.items():
        if os.environ.get(name, value) != str(value):
            print(f"lab: the matrix sets {name}={value} (not {os.environ[name]})", file=sys.stderr)
        os.environ[name] = str(value)


# Options that describe a new run: --resume takes the run's own and refuses these.
NEW_RUN_OPTIONS = (
    "profile", "vus", "duration", "ms", "n", "rate", "matrix", "repeat", "url", "port",
    "canary_rate", "python",
)  # fmt: skip
NEW_RUN_FLAGS = ("no_pin", "allow_remote")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_resume_options(args: argparse.Namespace) -> None:
    given = [_flag(o) for o in NEW_RUN_OPTIONS if getattr(args, o) is not None]
    given += [_flag(f) for f in NEW_RUN_FLAGS if getattr(args, f)]
    if given:
        raise UsageError(
            f"--resume continues a run with the settings it was started with; "
            f"drop {', '.join(given)}"
        )


def _check_params_apply(args: argparse.Namespace, cells_endpoints: set[str]) -> None:
    """--ms and --n must mean something for at least one endpoint that will run."""
    contract = load()
    for name in ("ms", "n"):
        if getattr(args, name) is None:
            continue
        takers = [e for e in sorted(cells_endpoints) if contract[e].param(name) is not None]
        if not takers:
            what = ", ".join(f"/{e}" for e in sorted(cells_endpoints))
            takes = sorted({p.name for e in cells_endpoints for p in contract[e].params})
            raise UsageError(
                f"--{name} does not apply to {what} "
                f"(it takes {', '.join(takes) if takes else 'no parameters'})"
            )


def _results_base(out: Path | None) -> Path:
    base = out or RESULTS_DIR
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(
            f"cannot write results to {base}: {exc.strerror or exc}; choose a writable --out"
        ) from None
    return base


def plan_text(name: str, cells: list[Cell], max_cell_s: float = MAX_CELL_S) -> str:
    """--plan: the cells a run would measure, in order, and how long it should take."""
    lines = [f"{name}: {len(cells)} cells, about {clock(estimate_s(cells))} (nothing started)"]
    width = len(str(len(cells)))
    for i, c in enumerate(cells, 1):
        lines.append(f"  {i:>{width}}  {c.id}  {c.expected_s:g} s")
    lines.append(
        f"each cell adds about {OVERHEAD_ESTIMATE_S:g} s to its load (start, calibration, stop); "
        f"a cell the model says would complete too few requests runs longer (at most "
        f"{max_cell_s:g} s)"
    )
    return "\n".join(lines)


def cmd_bench(
    args: argparse.Namespace, all_targets: bool = False, argv: list[str] | None = None
) -> int:
    with interrupt.handling():
        return _bench(args, all_targets, argv)


def _bench(args: argparse.Namespace, all_targets: bool, argv: list[str] | None) -> int:
    loadgen.binary()  # k6 missing: a one-line error before anything starts
    argv = argv or ["bench-all" if all_targets else "bench", *sys.argv[2:]]
    if args.resume:
        _check_resume_options(args)
        try:
            run = RunDir(resolve(args.resume, args.out or RESULTS_DIR))
            meta = mark_if_died(run)
        except (FileNotFoundError, ValueError) as exc:
            raise UsageError(
                str(exc)
                if isinstance(exc, FileNotFoundError)
                else f"{args.resume}: run.json is not readable ({exc})"
            ) from None
        if meta.get("status") == "running":
            raise UsageError(
                f"run {run.run_id} is still running (pid {meta['runner']['pid']}); "
                "stop it first (Ctrl-C or kill that pid)"
            )
        _results_base(run.path)
        options = Options(**meta["options"])
        cells = [Cell.from_json(c) for c in meta["cells"]]
        _apply_env((meta.get("matrix") or {}).get("env") or {})
        interpreters.check_cells(cells)
        if args.plan:
            done = {r["cell"] for r in run.rows() if r.get("status") == "ok"}
            todo = [c for c in cells if c.id not in done]
            print(plan_text(f"resume of {run.run_id}", todo, options.max_cell_s))
            return 0
    else:
        info = _check_url(args.url, args.allow_remote) if args.url else None
        if args.port and not args.url and server.port_in_use(args.port):
            raise UsageError(f"port {args.port} is already in use")
        matrix = _matrix(args, all_targets)
        _apply_env(matrix.env)
        if info is not None and matrix.python:
            raise UsageError("--python does not apply to --url (the server runs already)")
        interpreters.check_matrix(matrix)  # unknown interpreter: one line before anything runs
        seed = random.randrange(2**31)
        cells = expand(matrix, _targets_for(matrix, info), seed=seed)
        _check_params_apply(args, {c.endpoint for c in cells})
        options = Options(url=args.url, port=args.port, pin=not args.no_pin)
        if matrix.max_duration:
            options.max_cell_s = parse_duration(matrix.max_duration)
        if args.canary_rate is not None:
            options.canary_rate = args.canary_rate
        if args.plan:
            print(plan_text(matrix.name, cells, options.max_cell_s))
            return 0
        base = _results_base(args.out)
    lock = None if args.allow_concurrent else runlock.acquire()
    session: children.Session | None = None
    try:
        left = children.orphans()  # the lock is ours: any tagged process is a dead run's
        if left:
            runs = sorted({_tag(p) for p in left})
            pids = children.end(left)
            print(
                f"stopped {len(pids)} process{'es' if len(pids) != 1 else ''} left by an "
                f"earlier run ({', '.join(runs)})",
                file=sys.stderr,
            )
        if args.resume:
            retried = run.retry_errors()
            if retried:
                print(
                    f"{retried} cells that ended in an error will run again "
                    f"(their rows moved to {run.retried_path.name})",
                    file=sys.stderr,
                )
            cells, done = resume_cells(run)
            runner = Runner(run, options)
            runner.servers = meta.get("servers", {})
            meta["status"] = "running"
            meta["runner"] = runner_identity()
            meta.pop("died", None)
            run.write_meta(meta)
        else:
            try:
                run = RunDir.create(base)
            except OSError as exc:
                raise UsageError(f"cannot create a run folder in {base}: {exc.strerror}") from None
            runner = Runner(run, options)
            meta = start_run(runner, cells, {**matrix.to_json(), "seed": seed}, argv)
            done = set()
        if lock:
            lock.name(run=run.run_id, path=str(run.path))
        session = children.Session(run.run_id, run.path).start()
        children.set_session(session)
        run.point_latest()  # the run has started: only now does `latest` move
        return _execute(run, meta, runner, cells, done, all_targets)
    finally:
        children.set_session(None)
        if session:
            session.close()
        if lock:
            lock.release()


def _finish(run: RunDir, meta: dict, runner: Runner, status: str) -> bool:
    """Write run.json's end; on a full disk say so in one line (the rows are on disk; a
    later --resume, report or run finds the run's runner gone and marks it)."""
    try:
        finish_run(run, meta, runner, status)
        return True
    except OSError as exc:
        print(
            f"lab: cannot update {run.path / 'run.json'} ({exc.strerror or exc}); "
            f"the run {status}, its rows are in {run.csv_path}",
            file=sys.stderr,
        )
        return False


def _tag(p: psutil.Process) -> str:
    try:
        return p.environ().get("LAB_RUN", "?")
    except psutil.Error:
        return "?"


def _execute(
    run: RunDir,
    meta: dict,
    runner: Runner,
    cells: list[Cell],
    done: set[str],
    all_targets: bool,
) -> int:
    try:
        rows = runner.execute(cells, done)
    except KeyboardInterrupt:
        with interrupt.shielded():
            _finish(run, meta, runner, "interrupted")
        kept = len(run.rows())
        print(
            f"\ninterrupted: {kept} rows kept in {run.csv_path}; finish the missing cells with:\n"
            f"  {resume_command(meta['command'], run)}",
            file=sys.stderr,
        )
        return 130
    except OSError as exc:  # the results folder cannot be written (a full disk)
        _finish(run, meta, runner, "failed")
        print(
            f"lab: cannot write results in {run.path}: {exc.strerror or exc}; "
            f"{len(run.rows())} rows kept. Free space, then: "
            + resume_command(meta["command"], run),
            file=sys.stderr,
        )
        return 1
    if not _finish(run, meta, runner, "complete"):
        return 1
    print(summary_table(rows))
    claims = published_table(run.path)
    if claims:
        print(f"\n{claims}")
    print(f"\nresults: {run.csv_path}")
    if all_targets:
        from lab import report

        try:
            print(f"report:  {report.build(run.path)}")
        except Exception as exc:  # the rows are safe on disk; the report can be made again
            print(f"report failed ({exc!r}); retry with: just report {run.run_id}", file=sys.stderr)
    errors = sum(r["status"] != "ok" for r in rows)
    if errors:
        print(f"{errors} of {len(rows)} cells failed; see the error column", file=sys.stderr)
    return 1 if errors else 0


def published_table(run_path: Path) -> str:
    """For a run that re-created a post: its claims, published / measured / predicted."""
    from lab import published

    try:
        rep = published.from_run(run_path)
    except (MatrixError, LookupError) as exc:  # the rows are safe; say why there is no table
        return f"the post's claims could not be read: {exc}"
    return published.text_table(rep) if rep else ""


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Re-run a published post's experiment; without a name, list the posts."""
    from lab import published

    if args.post is None:
        print("posts the lab re-creates (just reproduce POST):")
        for name in published.posts():
            matrix = load_matrix(name)
            post = published.post_of(matrix)
            claims = len(published.claims_of(matrix))
            print(f"  {name:<14} {post.citation}: {len(matrix.cells)} cells, {claims} figures")
        return 0
    matrix = published.load_post(args.post)
    published.claims_of(matrix)  # a broken post file: one line before anything starts
    argv = ["bench-all", "--matrix", args.post]
    for flag, value in (("--repeat", args.repeat), ("--out", args.out), ("--port", args.port)):
        argv += [flag, str(value)] if value is not None else []
    argv += ["--no-pin"] if args.no_pin else []
    argv += ["--allow-concurrent"] if args.allow_concurrent else []
    bench = parser().parse_args(argv)  # the same options, defaults and checks as bench-all
    return cmd_bench(bench, all_targets=True, argv=argv)


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
    from lab import compare

    try:
        a, b = (resolve(r) for r in (args.run_a, args.run_b))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(compare.table(compare.compare(a, b)))
    return 0


def resume_command(argv: list[str], run: RunDir) -> str:
    """The command that finishes this run: the original recipe and positionals (bench needs
    its TARGET ENDPOINT), with --resume and the run's folder."""
    positionals = [argv[0]] + (
        [a for a in argv[1:3] if not a.startswith("-")] if argv[0] == "bench" else []
    )
    return f"just {' '.join(positionals)} --resume {run.run_id} --out {run.path.parent}"


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
    p.set_defaults(run=cmd_bench)
    p = sub.add_parser(
        "bench-all",
        help="benchmark the whole matrix (default: quick)",
        description="Benchmark a whole matrix: every discovered target x profile x endpoint "
        "(x VUs) of k6/matrices/NAME.toml, default 'quick'. Prints the cell count and the "
        "estimated time first, then a progress line per cell and a summary table.",
    )
    _bench_arguments(p)
    p.set_defaults(run=lambda a: cmd_bench(a, all_targets=True))
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
    except server.ServerError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 1
