"""`lab bench` and `lab bench-all`: the matrix from the options (or a run to resume), checks
that end a mistake in one line before anything starts, then the run itself with its lock,
its children's session, and an end that keeps every row however it stops (Ctrl-C, a full
disk). The commands' options are defined at the end of this file (`lab reproduce` shares
their run flags); lab/run/runner.py measures the cells, lab/rundir.py keeps the run's
folder."""

from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from lab import arguments, interpreters, stability
from lab.contract import load
from lab.errors import UsageError
from lab.matrix import (
    Cell,
    Matrix,
    MatrixError,
    expand,
    load_matrix,
    names,
    not_run,
    parse_duration,
)
from lab.model import MAX_CELL_S
from lab.proc import children, interrupt, netns, runlock, server
from lab.proc.database import Database, DatabaseUnavailable, bin_dir, display_url, run_as
from lab.record import RunMeta
from lab.run import loadgen, warmup
from lab.run.progress import clock
from lab.run.runner import OVERHEAD_S, Options, Runner, cell_estimates, estimate_s, summary_table
from lab.rundir import RESULTS_DIR, RunDir, past_cell_seconds, read_run, resolve
from lab.targets import Profile, Target, UnknownChoice, discover, find


def _check_url(url: str, allow_remote: bool) -> dict:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise UsageError(f"--url must look like http://127.0.0.1:8000, got {url!r}")
    host = parts.hostname
    if not server.is_loopback(host) and not allow_remote:
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
    "canary_rate", "python", "loadgens", "rtt_ms",
)  # fmt: skip
NEW_RUN_FLAGS = ("no_pin", "allow_remote", "netns")


def check_load_options(args: argparse.Namespace) -> None:
    """--loadgens, --netns and --rtt-ms make sense together, and here (one line, exit 2):
    --rtt-ms delays the namespaces' links, --netns needs root and starts its own servers
    (a --url server is not on the namespaces' bridge)."""
    if args.rtt_ms is not None and not args.netns:
        raise UsageError("--rtt-ms delays the load hosts' links: it needs --netns")
    if args.netns and args.url:
        raise UsageError(
            "--netns puts the lab's own servers on the load hosts' bridge; it does not apply "
            "to --url"
        )
    if args.netns:
        netns.check(args.rtt_ms)


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


def plan_text(
    name: str,
    cells: list[Cell],
    max_cell_s: float = MAX_CELL_S,
    skipped: list[str] | None = None,
    warm_up_max_s: float = warmup.MAX_S,
    past: dict[str, float] | None = None,
) -> str:
    """--plan: the cells a run would measure, in order, how long each should take (what it
    took before on this machine, `past`, or the load and its language's figures), and the
    cells its matrix leaves out (distinct_capacities)."""
    total = clock(estimate_s(cells, None, warm_up_max_s, past))
    lines = [f"{name}: {len(cells)} cells, about {total} (nothing started)"]
    width = len(str(len(cells)))
    each = cell_estimates(cells, None, warm_up_max_s, past)
    for i, (c, seconds) in enumerate(zip(cells, each, strict=True), 1):
        before = " (as before here)" if past and c.key in past else ""
        lines.append(f"  {i:>{width}}  {c.id}  {c.expected_s:g} s, about {seconds:.0f} s{before}")
    if skipped:
        lines.append(
            f"not run: {len(skipped)} cells whose capacity another endpoint of their profile "
            "measures (distinct_capacities; `--matrix full` runs them):"
        )
        lines += [f"  {line}" for line in skipped]
    lines.append(
        "a cell not run before here adds to its load its start, calibration and stop (about "
        + ", ".join(f"{s:g} s in {lang}" for lang, s in OVERHEAD_S.items())
        + f") and a JIT's warm-up (at most {warm_up_max_s:g} s); "
        f"a cell the model says would complete too few requests runs longer (at most "
        f"{max_cell_s:g} s)"
    )
    return "\n".join(lines)


@dataclass
class Plan:
    """What a bench command will do, decided before anything starts: the cells of a new run,
    or the rest of an earlier one (--resume). --plan prints it; otherwise it is run."""

    name: str  # how --plan names it: the matrix, or "resume of RUN"
    cells: list[Cell]  # every cell of the run, in order
    done: set[str]  # the cells that already have an ok row (a resumed run's)
    options: Options
    run: RunDir | None = None  # the run to resume; a new one is created once the lock is ours
    meta: RunMeta | None = None  # its run.json
    matrix: dict[str, Any] | None = None  # a new run's matrix, with its seed, for run.json
    database: Database | None = None  # --db-url's server, checked (not with --plan)

    @property
    def todo(self) -> list[Cell]:
        return [c for c in self.cells if c.id not in self.done]


def run(args: argparse.Namespace, all_targets: bool = False, argv: list[str] | None = None) -> int:
    """`lab bench` and `lab bench-all` (and `reproduce`, which is bench-all of a post). argv is
    the command line run.json records (and resume_command repeats): reproduce passes its own;
    otherwise lab.cli.main's, which it puts in args.argv."""
    with interrupt.handling():
        return _bench(args, all_targets, argv if argv is not None else args.argv)


def _resume_plan(args: argparse.Namespace) -> Plan:
    """--resume RUN: the run's own cells and options; the cells with an ok row are done."""
    _check_resume_options(args)
    try:
        run = RunDir(resolve(args.resume, args.out or RESULTS_DIR))
        meta = run.mark_if_died()
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(
            str(exc)
            if isinstance(exc, FileNotFoundError)
            else f"{args.resume}: run.json is not readable ({exc})"
        ) from None
    if meta.status == "running":
        raise UsageError(
            f"run {run.run_id} is still running (pid {(meta.runner or {}).get('pid')}); "
            "stop it first (Ctrl-C or kill that pid)"
        )
    if meta.options is None or meta.cells is None:
        raise UsageError(f"{args.resume}: run.json lacks its options or cells; it cannot resume")
    _results_base(run.path)
    options = Options(**meta.options)
    if options.netns:  # the run's namespaces are made again: root is needed again
        netns.check(options.rtt_ms)
    if args.db_url:  # run.json keeps the URL without its password: it may be given again
        if not options.db_url:
            raise UsageError(
                f"run {run.run_id} queried the embedded database; drop --db-url to resume it"
            )
        options.db_url = args.db_url
    cells = [Cell.from_json(c) for c in meta.cells]
    _apply_env((meta.matrix or {}).get("env") or {})
    interpreters.check_cells(cells)
    plan = Plan(f"resume of {run.run_id}", cells, run.done(), options, run, meta)
    try:
        plan.database = _database(plan, check=not args.plan)
    except DatabaseUnavailable as exc:
        if options.db_url and not args.db_url:
            raise DatabaseUnavailable(
                f"{exc}; run.json keeps the URL without its password: give it with --db-url"
            ) from None
        raise
    return plan


def _new_plan(args: argparse.Namespace, all_targets: bool) -> Plan:
    """A new run: the cells of the matrix the options describe, in a seeded random order."""
    check_load_options(args)
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
    options = Options(url=args.url, port=args.port, pin=not args.no_pin, db_url=args.db_url)
    options.loadgens, options.netns, options.rtt_ms = args.loadgens or 1, args.netns, args.rtt_ms
    if matrix.max_duration:
        options.max_cell_s = parse_duration(matrix.max_duration)
    if matrix.graceful_stop:
        options.graceful_stop_s = parse_duration(matrix.graceful_stop)
    if matrix.warm_up_max:
        options.warm_up_max_s = parse_duration(matrix.warm_up_max)
    if args.canary_rate is not None:
        options.canary_rate = args.canary_rate
    skipped = not_run(matrix, _targets_for(matrix, info))
    plan = Plan(
        matrix.name,
        cells,
        set(),
        options,
        matrix={**matrix.to_json(), "seed": seed, "not_run": skipped},
    )
    if args.db_url and not _db_cells(plan.cells):
        raise UsageError("--db-url does not apply: no cell of this run queries a database")
    plan.database = _database(plan, check=not args.plan)
    return plan


def _db_cells(cells: list[Cell]) -> list[Cell]:
    contract = load()
    return [c for c in cells if contract[c.endpoint].kind == "db"]


def _database(plan: Plan, check: bool) -> Database | None:
    """The database the run's db cells will query, checked before anything starts (one line,
    exit 2): --db-url's server reachable (and its world table there), or the embedded
    server's binaries installed and its user able to run them. Returns the user's server;
    the embedded one is started by the runner, in the run's folder. check=False (--plan):
    nothing is connected to."""
    if not check or not _db_cells(plan.todo):
        return None
    if plan.options.db_url:
        return Database.external(plan.options.db_url)
    if not plan.options.url:  # with --url alone the remote server has its own
        bin_dir()
        run_as()
    return None


def _bench(args: argparse.Namespace, all_targets: bool, argv: list[str]) -> int:
    loadgen.binary()  # k6 missing: a one-line error before anything starts
    plan = _resume_plan(args) if args.resume else _new_plan(args, all_targets)
    if args.plan:
        skipped = (plan.matrix or {}).get("not_run")
        where = plan.run.path.parent if plan.run else (args.out or RESULTS_DIR)
        past = past_cell_seconds(where, skip=plan.run.run_id if plan.run else "")
        options = plan.options
        print(
            plan_text(
                plan.name, plan.todo, options.max_cell_s, skipped, options.warm_up_max_s, past
            )
        )
        return 0
    # a new run's results folder is made (and checked) only now: --plan writes nothing
    base = plan.run.path.parent if plan.run else _results_base(args.out)
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
        removed = netns.remove_leftovers()  # as root: the namespaces of runs that were killed
        if removed:
            print(f"removed {', '.join(removed)}, left by an earlier run", file=sys.stderr)
        run, meta, runner = _open(plan, base, argv)
        if lock:
            lock.name(run=run.run_id, path=str(run.path))
        session = children.Session(run.run_id, run.path).start()
        children.set_session(session)
        run.point_latest()  # the run has started: only now does `latest` move
        return _execute(run, meta, runner, plan, all_targets)
    finally:
        children.set_session(None)
        if session:
            session.close()
        if lock:
            lock.release()


def _open(plan: Plan, base: Path, argv: list[str]) -> tuple[RunDir, RunMeta, Runner]:
    """The run's folder, once the lock is ours: the earlier run, its error rows set aside to
    run again and its run.json saying that this process runs it; or a new run and its run.json."""
    if plan.run is not None and plan.meta is not None:
        run, meta = plan.run, plan.meta
        retried = run.retry_errors()
        if retried:
            print(
                f"{retried} cells that ended in an error will run again "
                f"(their rows moved to {run.retried_path.name})",
                file=sys.stderr,
            )
        runner = Runner(run, plan.options, plan.database)
        run.resume(meta)
        return run, meta, runner
    try:
        run = RunDir.create(base)
    except OSError as exc:
        raise UsageError(f"cannot create a run folder in {base}: {exc.strerror}") from None
    runner = Runner(run, plan.options, plan.database)
    cpus = {"server": runner.server_cpus, "k6": runner.k6_cpus}
    meta = run.start(
        plan.cells, plan.matrix or {}, _shown(argv), plan.options.to_json(), cpus, loadgen.binary()
    )
    return run, meta, runner


def _shown(argv: list[str]) -> list[str]:
    """The command line as run.json records it: --db-url's password left out."""
    shown, hide = [], False
    for arg in argv:
        if hide:
            arg, hide = display_url(arg), False
        elif arg == "--db-url":
            hide = True
        elif arg.startswith("--db-url="):
            arg = "--db-url=" + display_url(arg.split("=", 1)[1])
        shown.append(arg)
    return shown


def _finish(run: RunDir, meta: RunMeta, runner: Runner, status: str) -> bool:
    """Write run.json's end; on a full disk say so in one line (the rows are on disk; a
    later --resume, report or run finds the run's runner gone and marks it)."""
    costs = [cost.to_json() for _, cost in sorted(runner.loadgen.items())]
    try:
        run.finish(
            meta,
            status,
            runner.servers,
            costs,
            runner.database_record(),
            runner.stability,
            runner.upstream_record,
        )
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


def _execute(run: RunDir, meta: RunMeta, runner: Runner, plan: Plan, all_targets: bool) -> int:
    command = meta.command or []
    try:
        rows = runner.execute(plan.cells, plan.done)
    except KeyboardInterrupt:
        with interrupt.shielded():
            _finish(run, meta, runner, "interrupted")
        kept = len(run.rows())
        print(
            f"\ninterrupted: {kept} rows kept in {run.csv_path}; finish the missing cells with:\n"
            f"  {resume_command(command, run)}",
            file=sys.stderr,
        )
        return 130
    except UsageError:  # the database could not start: one line (lab.cli), no cell ran
        with interrupt.shielded():
            _finish(run, meta, runner, "failed")
        raise
    except OSError as exc:  # the results folder cannot be written (a full disk)
        _finish(run, meta, runner, "failed")
        print(
            f"lab: cannot write results in {run.path}: {exc.strerror or exc}; "
            f"{len(run.rows())} rows kept. Free space, then: " + resume_command(command, run),
            file=sys.stderr,
        )
        return 1
    if not _finish(run, meta, runner, "complete"):
        return 1
    print(summary_table(rows))
    if runner.stability:
        print(f"\n{stability.describe(runner.stability)}")
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
    errors = sum(r.status != "ok" for r in rows)
    if errors:
        print(f"{errors} of {len(rows)} cells failed; see the error column", file=sys.stderr)
    return 1 if errors else 0


def published_table(run_path: Path) -> str:
    """For a run that re-created a post: its claims, published / measured / predicted."""
    from lab.report import posts

    try:
        rep = posts.from_run(read_run(run_path))
    except (MatrixError, LookupError) as exc:  # the rows are safe; say why there is no table
        return f"the post's claims could not be read: {exc}"
    return posts.text_table(rep) if rep else ""


def resume_command(argv: list[str], run: RunDir) -> str:
    """The command that finishes this run: the original recipe and positionals (bench needs
    its TARGET ENDPOINT), with --resume and the run's folder."""
    positionals = argv[:1] + (
        [a for a in argv[1:3] if not a.startswith("-")] if argv[:1] == ["bench"] else []
    )
    return f"just {' '.join(positionals)} --resume {run.run_id} --out {run.path.parent}"


# --- the commands: bench, bench-all (and the run flags `lab reproduce` shares) -------------


def run_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of a run that `lab reproduce` shares with bench-all (a reproduction is
    bench-all of the post's matrix): defined once, so both check and default them alike."""
    p.add_argument("--repeat", type=arguments.positive, help="run every cell N times, interleaved")
    p.add_argument("--out", type=Path, help="results folder (default results/)")
    p.add_argument(
        "--port",
        type=arguments.port_number,
        help="fixed port for the servers (default: a free one)",
    )
    p.add_argument("--no-pin", action="store_true", help="do not pin server and k6 to CPUs")
    p.add_argument(
        "--allow-concurrent",
        action="store_true",
        help="run even if another run is using this machine (both measurements suffer)",
    )


def run_flags(args: argparse.Namespace) -> list[str]:
    """The run flags set in args, as they are typed (reproduce records them in run.json's
    command, which resume_command repeats)."""
    argv: list[str] = []
    for flag, value in (("--repeat", args.repeat), ("--out", args.out), ("--port", args.port)):
        argv += [flag, str(value)] if value is not None else []
    argv += ["--no-pin"] if args.no_pin else []
    argv += ["--allow-concurrent"] if args.allow_concurrent else []
    return argv


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", help="server profile: a name, 'default' or 'all'")
    p.add_argument(
        "--vus", type=arguments.int_list, help="virtual users (closed model), e.g. 50 or 1,10,50"
    )
    p.add_argument("--duration", type=arguments.duration, help="measured time per cell, e.g. 10s")
    p.add_argument("--ms", type=int, help="ms parameter of the endpoints that take it")
    p.add_argument("--n", type=int, help="n parameter of the endpoints that take it")
    p.add_argument(
        "--rate", type=arguments.int_list, help="open model: requests per second (list ok)"
    )
    p.add_argument("--matrix", help=f"named matrix in k6/matrices ({', '.join(names())})")
    run_arguments(p)
    p.add_argument("--url", help="benchmark a running server at this URL (no local lifecycle)")
    p.add_argument("--allow-remote", action="store_true", help="let --url name a non-loopback host")
    p.add_argument(
        "--db-url",
        metavar="URL",
        help="the database cells query your PostgreSQL at this URL (postgresql://user:pass@host"
        "/db): nothing is started or pinned; default: an embedded one per run",
    )
    p.add_argument("--resume", metavar="RUN", help="finish the missing cells of an earlier run")
    p.add_argument(
        "--loadgens",
        type=arguments.positive,
        help="split each cell's load into N k6 instances (execution segments), merged into "
        "one row (default 1)",
    )
    p.add_argument(
        "--netns",
        action="store_true",
        help="run each k6 instance in a network namespace of its own, a load host on a "
        "bridge to the server (root only)",
    )
    p.add_argument(
        "--rtt-ms",
        type=arguments.positive_number,
        metavar="MS",
        help="with --netns: tc netem delay on each load host's link (the round trip grows by "
        "MS; the model adds the measured one to Z)",
    )
    p.add_argument(
        "--canary-rate",
        type=arguments.non_negative,
        help="canary /hello requests per second (0: off)",
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


def bench_all_arguments(argv: list[str]) -> argparse.Namespace:
    """bench-all's arguments from a command line of its options (reproduce's --matrix POST and
    run flags), read by bench-all's own definitions: the same defaults and checks."""
    p = argparse.ArgumentParser(prog="lab bench-all")
    _bench_arguments(p)
    return p.parse_args(argv)


def cmd_bench(args: argparse.Namespace) -> int:
    """Benchmark one target x one endpoint: a fresh server per cell, pinned apart from k6,
    results in results/<run-id>/results.csv. Knobs such as WORKERS are read from the
    environment and recorded."""
    return run(args)


def cmd_bench_all(args: argparse.Namespace) -> int:
    """Benchmark a whole matrix: every discovered target x profile x endpoint (x VUs) of
    k6/matrices/NAME.toml, default 'quick'. Prints the cell count and the estimated time
    first, then a progress line per cell and a summary table."""
    return run(args, all_targets=True)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = arguments.add_command(sub, "bench", cmd_bench, "benchmark one target x one endpoint")
    p.add_argument("target", help="target name or alias (see 'just targets')")
    p.add_argument("endpoint", help="endpoint name from the contract, e.g. sync, cpu-pool")
    _bench_arguments(p)
    p = arguments.add_command(
        sub, "bench-all", cmd_bench_all, "benchmark the whole matrix (default: quick)"
    )
    _bench_arguments(p)
