"""The lab's command line (what the justfile calls): each command's module registers its own
sub-parser (`add_parser(sub)`, with lab.arguments.add_command: the function the command runs
becomes `run`, its docstring the command's description); this module puts them in order,
dispatches, and maps the errors to exit codes. User mistakes end with one line on stderr and
exit status 2; nothing is started before the arguments are known to be good."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lab import report, targets
from lab.errors import USAGE_ERROR, UsageError
from lab.matrix import MatrixError
from lab.proc import runlock, server
from lab.report import compare
from lab.run import bench, ingest, k6operator, loadgen, reproduce, serve
from lab.targets import UnknownChoice
from lab.tools import docs, scaffold

# `lab --help` lists the commands in this order.
COMMANDS = (
    targets,
    server,
    serve,
    bench,
    reproduce,
    k6operator,
    ingest,
    report,
    compare,
    scaffold,
    docs,
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
    for module in COMMANDS:
        module.add_parser(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv  # the command line as typed: bench records it in run.json
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
