"""The command line: every command the justfile calls is registered (each by the module that
owns it) and listed by `lab --help`; reproduce reads its run flags as bench-all does; a bad
port, from an option or the environment, is one line and exit 2."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from harness.labrun import run_lab

from lab import ROOT, cli
from lab.run import bench

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def justfile_commands() -> list[str]:
    """The X of every `python -m lab X` in the justfile (not `-m lab.interpreters`)."""
    text = (ROOT / "justfile").read_text()
    return sorted(set(re.findall(r"-m lab ([a-z][a-z0-9-]*)", text)))


def registered() -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of `lab`, by command name."""
    top = cli.parser()
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_justfile_calls_commands_the_lab_has() -> None:
    called = justfile_commands()
    assert len(called) >= 10, called  # the pattern still finds the recipes' commands
    assert set(called) <= set(registered())


def test_every_registered_command_runs_something() -> None:
    for name, p in registered().items():
        assert callable(p.get_default("run")), f"{name} sets no `run`"


def test_help_lists_every_command() -> None:
    done = run_lab("--help")
    assert done.returncode == 0, done.stderr
    listed = re.findall(r"^ {4}([a-z][a-z0-9-]*)", done.stdout, re.MULTILINE)
    assert listed == list(registered())  # in cli.COMMANDS's order
    assert set(justfile_commands()) <= set(listed)


RUN_FLAGS = ["--repeat", "2", "--out", "a/b", "--port", "9100", "--no-pin", "--allow-concurrent"]


@pytest.mark.parametrize("flags", [[], RUN_FLAGS])
def test_reproduce_runs_the_bench_all_its_command_records(flags: list[str]) -> None:
    """reproduce's run flags are bench-all's: the same definitions, defaults and checks; the
    command run.json records for it, read back by bench-all, gives the arguments it ran."""
    given = cli.parser().parse_args(["reproduce", "flask-workers", *flags])
    argv = ["bench-all", "--matrix", "flask-workers", *bench.run_flags(given)]
    assert argv[3:] == flags
    ran = vars(bench.bench_all_arguments(argv[1:]))
    recorded = vars(cli.parser().parse_args(argv))
    assert ran == {k: v for k, v in recorded.items() if k not in {"command", "run"}}
    if flags:
        assert (ran["repeat"], ran["out"], ran["port"]) == (2, Path("a/b"), 9100)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["serve", "go"], {"PORT": "x"}, "lab: error: PORT must be a port number (1-65535)"),
        (["serve", "go"], {"UPSTREAM_PORT": "0"}, "UPSTREAM_PORT must be a port number (1-65535)"),
        (["bench", "go", "sync", "--port", "70000"], {}, "expected a port number 1-65535"),
        (["reproduce", "speedup", "--port", "x"], {}, "expected a port number 1-65535, got 'x'"),
        (["bench", "go", "nope"], {}, "lab: error: unknown endpoint 'nope'"),
    ],
)
def test_port_and_other_mistakes_are_one_line(
    args: list[str], env: dict[str, str], message: str
) -> None:
    done = run_lab(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr


def test_serve_with_an_unreachable_db_url_is_one_line() -> None:
    """Before anything starts: the ports are free, the target is known, the database is not
    there (its password never shown)."""
    from lab.proc.server import free_port

    url = f"postgresql://lab:secret@127.0.0.1:{free_port()}/postgres"
    env = {"PORT": str(free_port()), "UPSTREAM_PORT": str(free_port())}
    done = run_lab("serve", "go", "--db-url", url, env=env)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "unreachable" in done.stderr and "secret" not in done.stderr
    assert done.stdout == ""  # no banner: nothing was served
