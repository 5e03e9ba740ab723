"""What the command modules share to define their command lines: add_command, which
registers a command (its name, its line in `lab --help` and the function it runs, whose
docstring is its description), and the options' value types: argparse `type=` functions for
bench, bench-all and reproduce (a bad value ends the command with one line and exit status 2,
before anything starts), with the one port check, which `lab serve` applies to PORT and
UPSTREAM_PORT too."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from lab.matrix import MatrixError, parse_duration


def add_command(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    run: Callable[[argparse.Namespace], int],
    help: str,
) -> argparse.ArgumentParser:
    """The sub-command NAME, which runs `run`: `help` is its line in `lab --help`, run's
    docstring its description in `lab NAME --help` (argparse re-wraps it). Add its arguments
    to the parser returned."""
    p = sub.add_parser(name, help=help, description=run.__doc__)
    p.set_defaults(run=run)
    return p


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers like 10 or 1,10,50, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def port_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 1-65535, got {text!r}")
    return int(text)


def non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return int(text)


def duration(text: str) -> str:
    try:
        if parse_duration(text) <= 0:
            raise MatrixError("duration must be positive")
    except MatrixError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
