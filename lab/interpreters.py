"""The Python interpreters a target can be served on: one environment per interpreter, all
installed from the same uv.lock. `.venv` is the default (the lab itself runs there);
`.venvs/<label>` holds the others, made by `just setup` for every interpreter it finds.

A label is major.minor, with a `t` for a free-threaded build: 3.11, 3.13, 3.13t. It is the
value of the `--python` axis and of `PYTHON=` for `just serve`.

    python -m lab.interpreters          list the environments that are set up
    python -m lab.interpreters setup    find interpreters and make an environment for each
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab import ROOT, targets
from lab.matrix import Cell, Matrix, MatrixError
from lab.targets import UnknownChoice

DEFAULT_ENV = ROOT / ".venv"
ENVS_DIR = ROOT / ".venvs"
# What `just setup` looks for: the minor versions requires-python allows, and their
# free-threaded builds (3.13 is the first to have one).
FREE_THREADED_FROM = (3, 13)

# Run by an environment's interpreter: what it is. A free-threaded build may still run with
# the GIL (PYTHON_GIL=1, or an extension that does not declare itself safe re-enables it), so
# the build and the runtime state are two facts; /info reports the runtime one per server.
_PROBE = (
    "import json, platform, sys, sysconfig; g = getattr(sys, '_is_gil_enabled', None); "
    "print(json.dumps({'version': platform.python_version(), "
    "'implementation': sys.implementation.name, 'gil': g() if g else True, "
    "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
    "'executable': sys.executable}))"
)


class Unavailable(UnknownChoice):
    """An interpreter label that has no environment; the message says which ones do and how
    to add one. An UnknownChoice, so the command line turns it into one line and exit 2."""

    def __init__(self, label: str, available: list[Interpreter]) -> None:
        names = ", ".join(i.name for i in available) or "none"
        wanted = wanted_labels()
        if label in wanted:
            fix = f"to add it, install it ({how_to_get(label)}), then run `just setup`"
        else:
            fix = f"the lab supports {', '.join(wanted)} (requires-python in pyproject.toml)"
        LookupError.__init__(self, f"python {label} is not set up; available: {names}; {fix}")


@dataclass(frozen=True)
class Interpreter:
    label: str  # "3.13", "3.13t"
    version: str  # "3.13.0"
    implementation: str  # "cpython"
    free_threaded: bool  # built without the GIL (it may still turn it on at runtime)
    env: Path
    default: bool

    @property
    def bin_dir(self) -> Path:
        return self.env / "bin"

    @property
    def name(self) -> str:
        return f"{self.label} (default)" if self.default else self.label

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["env"] = os.path.relpath(self.env, ROOT)
        return data


def probe(python: Path | str) -> dict[str, Any] | None:
    """What an interpreter is, by running it; None when it does not run."""
    try:
        done = subprocess.run(
            [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=20, check=False
        )
        return json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def label_of(facts: dict[str, Any]) -> str:
    major, minor = facts["version"].split(".")[:2]
    return f"{major}.{minor}" + ("t" if facts["free_threaded"] else "")


def _from_env(env: Path, default: bool) -> Interpreter | None:
    facts = probe(env / "bin" / "python")
    if facts is None:
        return None
    return Interpreter(
        label_of(facts),
        facts["version"],
        facts["implementation"],
        facts["free_threaded"],
        env,
        default,
    )


@functools.cache
def available() -> tuple[Interpreter, ...]:
    """The environments that are set up and run: the default first, then by version."""
    found = [i for i in [_from_env(DEFAULT_ENV, True)] if i]
    others = [_from_env(p, False) for p in sorted(ENVS_DIR.glob("*")) if p.is_dir()]
    labels = {i.label for i in found}
    for i in sorted((i for i in others if i), key=lambda i: version_key(i.label)):
        if i.label not in labels:  # .venvs/3.11 beside a 3.11 .venv: the default wins
            found.append(i)
            labels.add(i.label)
    return tuple(found)


def version_key(label: str) -> tuple[int, ...]:
    """Sorts labels by version, a free-threaded build after its plain one: 3.9 < 3.13 < 3.13t."""
    parts = label.rstrip("t").split(".")
    return (*(int(p) for p in parts if p.isdigit()), label.endswith("t"))


def find(label: str, envs: tuple[Interpreter, ...] | None = None) -> Interpreter:
    """The environment for a label ("3.13"), a full version ("3.13.0") or "default"."""
    envs = available() if envs is None else envs
    wanted = label.strip()
    for i in envs:
        if wanted in (i.label, i.version) or (wanted == "default" and i.default):
            return i
    raise Unavailable(wanted, list(envs))


def resolve(labels: list[str], envs: tuple[Interpreter, ...] | None = None) -> list[Interpreter]:
    """Every label's environment, once each, in the order given."""
    chosen: dict[str, Interpreter] = {}
    for label in labels:
        i = find(label, envs)
        chosen.setdefault(i.label, i)
    return list(chosen.values())


def parse_labels(text: str) -> list[str]:
    """--python 3.11,3.13 -> ["3.11", "3.13"]."""
    return [part.strip() for part in text.split(",") if part.strip()]


def how_to_get(label: str) -> str:
    if label.endswith("t"):
        return f"e.g. `pyenv install {label.removesuffix('t')}.0t`, a free-threaded build"
    return f"e.g. `pyenv install {label}`, or your OS's python{label} package"


def row_fields(info: dict[str, Any], interpreter: Interpreter | None) -> dict[str, Any]:
    """The interpreter columns of a row: from the server's /info (what really ran), else from
    the environment the cell asked for; empty for a target that is not Python."""
    if info.get("language") == "python":
        return {
            "python": info.get("language_version"),
            "python_impl": info.get("python_implementation"),
            "gil": info.get("gil_enabled"),
        }
    if interpreter is not None:
        return {
            "python": interpreter.version,
            "python_impl": interpreter.implementation,
            "gil": None if interpreter.free_threaded else True,
        }
    return {"python": None, "python_impl": None, "gil": None}


def check_matrix(matrix: Matrix) -> None:
    """A matrix's interpreters, checked and written as labels ("3.13.0" -> "3.13") before
    anything starts; Unavailable names the ones set up."""
    if not isinstance(matrix.python, list) or not all(isinstance(p, str) for p in matrix.python):
        raise MatrixError('python must be a list of strings, e.g. python = ["3.11", "3.13"]')
    matrix.python = [i.label for i in resolve(matrix.python)]


def check_cells(cells: list[Cell]) -> None:
    """A resumed run's interpreters must still be set up."""
    resolve(sorted({c.python for c in cells if c.python}))


def for_cell(cell: Cell) -> Interpreter | None:
    """The environment a cell's server runs on: the one it names, the default for a Python
    cell that names none, None for a target that is not Python."""
    if cell.python:
        return find(cell.python)
    try:
        python = targets.find(cell.target).language == "python"
    except UnknownChoice:  # a remote target (--url): not ours to start
        return None
    return find("default") if python else None


def used(cells: list[Cell], local: bool = True) -> dict[str, Any]:
    """run.json's record: every interpreter the cells run on, and every one set up."""
    chosen: dict[str, Interpreter] = {}
    for cell in cells if local else []:
        with contextlib.suppress(Unavailable):
            i = for_cell(cell)
            if i:
                chosen.setdefault(i.label, i)
    return {
        "used": [i.to_json() for i in chosen.values()],
        "available": [i.to_json() for i in available()],
    }


# --- setup: find interpreters, make their environments --------------------------------------


def wanted_labels() -> list[str]:
    """The minor versions pyproject's requires-python allows (>=3.11,<3.14 -> 3.11..3.13),
    and a free-threaded label for each that has such builds."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low, high = (3, 11), (3, 14)
    for part in spec.split(","):
        part = part.strip()
        version = tuple(int(x) for x in part.lstrip("<>=~!").split(".")[:2])
        if part.startswith(">="):
            low = version  # type: ignore[assignment]
        elif part.startswith("<"):
            high = version  # type: ignore[assignment]
    minors = [(3, m) for m in range(low[1], high[1])]
    plain = [f"{a}.{b}" for a, b in minors]
    return plain + [f"{a}.{b}t" for a, b in minors if (a, b) >= FREE_THREADED_FROM]


def candidates(label: str) -> list[str]:
    """Executables that may be this interpreter: pyenv's versions, then PATH (not pyenv's
    shims, which fail for versions the current pyenv setting does not select)."""
    exe = f"python{label}"
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(glob.glob(str(root / "versions" / f"{label.rstrip('t')}*" / "bin" / exe)))
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and "shims" not in Path(folder).parts:
            path = Path(folder) / exe
            if path.is_file() and os.access(path, os.X_OK):
                found.append(str(path))
    return found


def find_installed(labels: list[str]) -> dict[str, str]:
    """label -> the executable of the newest interpreter found for it."""
    found: dict[str, tuple[tuple[int, ...], str]] = {}
    for label in labels:
        for exe in candidates(label):
            facts = probe(exe)
            if facts is None or label_of(facts) != label:
                continue
            key = tuple(int(x) for x in facts["version"].split(".") if x.isdigit())
            if label not in found or key > found[label][0]:
                found[label] = (key, exe)
    return {label: exe for label, (_, exe) in found.items()}


def sync(label: str, exe: str) -> str | None:
    """Install the locked environment for one interpreter into .venvs/<label>; the failure's
    last lines, or None when it worked."""
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(ENVS_DIR / label)}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    pinned = ROOT / ".tools" / "uv" / "bin" / "uv"  # the uv `just setup` pins, else PATH's
    uv = str(pinned) if pinned.is_file() else "uv"
    done = subprocess.run(
        [uv, "sync", "--frozen", "--quiet", "--python", exe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return None
    return " | ".join(done.stderr.strip().splitlines()[-3:]) or f"exit {done.returncode}"


def setup() -> int:
    """Make an environment for every interpreter found besides the default; name the ones
    missing and how to get them. Missing interpreters are not a failure: the lab runs on the
    default alone."""
    default = _from_env(DEFAULT_ENV, True)
    if default is None:
        print("interpreters: .venv does not run; `uv sync` it first", file=sys.stderr)
        return 1
    labels = wanted_labels()
    installed = find_installed([label for label in labels if label != default.label])
    failed: list[str] = []
    for label, exe in installed.items():
        problem = sync(label, exe)
        if problem:
            failed.append(label)
            print(f"interpreters: {label} ({exe}) could not be set up: {problem}", file=sys.stderr)
    available.cache_clear()
    ready = available()
    print("interpreters: " + ", ".join(f"{i.name} {i.version}" for i in ready))
    missing = [x for x in labels if x not in {i.label for i in ready} and x not in failed]
    plain = [x for x in missing if not x.endswith("t")]
    if plain:
        print(
            "  not found: "
            + ", ".join(plain)
            + f" (to add one: {how_to_get(plain[0])}; then `just setup`)"
        )
    if not any(i.free_threaded for i in ready):
        threaded = [x for x in labels if x.endswith("t")]
        print(
            "  no free-threaded interpreter ("
            + "/".join(threaded)
            + f"): {how_to_get(threaded[-1]) if threaded else 'none allowed by requires-python'}"
        )
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["setup"]:
        return setup()
    if argv:
        print("usage: python -m lab.interpreters [setup]", file=sys.stderr)
        return 2
    for i in available():
        gil = "free-threaded build" if i.free_threaded else "with the GIL"
        print(f"{i.name:<16} {i.implementation} {i.version:<8} {gil:<20} {i.to_json()['env']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
