"""Benchmark matrices: named files in k6/matrices/ expanded into cells, one cell being one
fresh server measured under one load. Cells are plain data so a run can be resumed."""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lab import ROOT
from lab.contract import Contract, load
from lab.targets import Target, UnknownChoice, discover, find

MATRIX_DIR = ROOT / "k6" / "matrices"
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0}


class MatrixError(ValueError):
    """A matrix file or option that cannot be used; the message says why."""


def parse_duration(text: str) -> float:
    """k6-style duration ("500ms", "10s", "2m", "1m30s") in seconds."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise MatrixError(f"duration must look like 10s, 500ms or 1m30s, got {text!r}")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


@dataclass(frozen=True)
class Cell:
    target: str
    profile: str
    endpoint: str
    params: tuple[tuple[str, int], ...]  # the endpoint's own parameters, all filled in
    vus: int
    rate: int | None
    duration: str
    repeat: int
    python: str = ""  # interpreter label (lab.interpreters); "" = the default environment

    @property
    def series(self) -> str:
        """target/profile, and the interpreter when the cell names one: fastapi/uvicorn+py3.13."""
        return f"{self.target}/{self.profile}{python_suffix(self.python)}"

    @property
    def id(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params)
        load_ = f"rate={self.rate},vus={self.vus}" if self.rate else f"vus={self.vus}"
        return f"{self.series}/{self.endpoint}?{params}@{load_}#{self.repeat}"

    @property
    def duration_s(self) -> float:
        return parse_duration(self.duration)

    def param(self, name: str) -> int | None:
        return dict(self.params).get(name)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cell:
        return cls(**{**data, "params": tuple(data["params"].items())})


def python_suffix(label: str) -> str:
    return f"+py{label}" if label else ""


def python_of(cell_id: str) -> str:
    """The interpreter label in a cell id ("" when it names none)."""
    series = "/".join(cell_id.split("/", 2)[:2])
    return series.rsplit("+py", 1)[1] if "+py" in series else ""


@dataclass
class Matrix:
    name: str
    description: str = ""
    targets: str | list[str] = "all"
    profiles: str | list[str] = "default"  # "default", "all", or profile names
    endpoints: str | list[str] = "all"
    vus: list[int] = field(default_factory=lambda: [50])
    rates: list[int | None] = field(default_factory=lambda: [None])
    duration: str = "10s"
    repeat: int = 1
    params: dict[str, Any] = field(default_factory=dict)  # {"ms": 100, "cpu": {"n": ...}}
    # Interpreter labels for Python targets (["3.11", "3.13"]); empty = the default environment.
    python: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def names() -> list[str]:
    return sorted(p.stem for p in MATRIX_DIR.glob("*.toml"))


def load_matrix(name: str) -> Matrix:
    path = MATRIX_DIR / f"{name}.toml"
    if not path.is_file():
        raise UnknownChoice("matrix", name, names())
    data = tomllib.loads(path.read_text())
    rate = data.pop("rate", None)
    if isinstance(data.get("python"), str):
        data["python"] = [data["python"]]
    matrix = Matrix(name=name, **data)
    if rate is not None:
        matrix.rates = rate if isinstance(rate, list) else [rate]
    return matrix


def _pick(what: str, wanted: str | list[str], choices: list[str]) -> list[str]:
    if wanted == "all":
        return choices
    wanted = [wanted] if isinstance(wanted, str) else wanted
    for w in wanted:
        if w not in choices:
            raise UnknownChoice(what, w, choices)
    return list(wanted)


def _params(endpoint: str, matrix: Matrix, contract: Contract) -> tuple[tuple[str, int], ...]:
    """The endpoint's parameters: contract defaults, then the matrix's global values, then
    its per-endpoint table; each checked against the contract's bounds."""
    ep = contract[endpoint]
    overrides = {k: v for k, v in matrix.params.items() if not isinstance(v, dict)}
    overrides.update(matrix.params.get(endpoint, {}))
    values = ep.defaults()
    for name, value in overrides.items():
        p = ep.param(name)
        if p is None:
            continue  # a global value (e.g. ms) simply does not apply to this endpoint
        if isinstance(value, bool) or not isinstance(value, int):
            raise MatrixError(f"{endpoint}: {name} must be an integer, got {value!r}")
        problem = p.check(value)
        if problem:
            raise MatrixError(f"{endpoint}: {problem}")
        values[name] = value
    return tuple(values.items())


def expand(matrix: Matrix, targets: list[Target] | None = None, seed: int = 0) -> list[Cell]:
    """Every cell of the matrix. Repetitions are interleaved in a shuffled order (seeded, so
    a resumed run sees the same order), never run back to back."""
    contract = load()
    targets = discover() if targets is None else targets
    if matrix.targets == "all":
        chosen = targets
    else:
        wanted = [matrix.targets] if isinstance(matrix.targets, str) else matrix.targets
        chosen = [find(name, targets) for name in wanted]
    endpoints = _pick("endpoint", matrix.endpoints, [e.name for e in contract.bench_endpoints()])
    if matrix.repeat < 1:
        raise MatrixError("repeat must be at least 1")
    if any(v < 1 for v in matrix.vus):
        raise MatrixError("vus must be at least 1")
    if any(r is not None and r < 1 for r in matrix.rates):
        raise MatrixError("rate must be at least 1")
    parse_duration(matrix.duration)
    if not isinstance(matrix.python, list) or not all(isinstance(p, str) for p in matrix.python):
        raise MatrixError('python must be a list of strings, e.g. python = ["3.11", "3.13"]')
    base: list[Cell] = []
    for target in chosen:
        if matrix.profiles == "default":
            profiles = [target.default_profile]
        else:
            profiles = _pick(f"{target.name} profile", matrix.profiles, list(target.profiles))
        # Only Python targets have the interpreter axis; a Go cell runs once.
        pythons = (matrix.python or [""]) if target.language == "python" else [""]
        for profile in profiles:
            for endpoint in endpoints:
                params = _params(endpoint, matrix, contract)
                for vus in matrix.vus:
                    for rate in matrix.rates:
                        # Interpreters innermost: the cells they are compared in run back to
                        # back, on the same machine state.
                        for python in pythons:
                            base.append(
                                Cell(
                                    target.name,
                                    profile,
                                    endpoint,
                                    params,
                                    vus,
                                    rate,
                                    matrix.duration,
                                    1,
                                    python,
                                )
                            )
    if matrix.repeat == 1:
        return base
    # Each repetition is a shuffled round of every cell, so repeats of one cell are spread
    # over the run; where a round would start with the cell the previous one ended with,
    # that cell moves to the round's end.
    rng = random.Random(seed)
    cells: list[Cell] = []
    for r in range(1, matrix.repeat + 1):
        round_ = [replace(c, repeat=r) for c in base]
        rng.shuffle(round_)
        if (
            cells
            and len(round_) > 1
            and replace(round_[0], repeat=1) == replace(cells[-1], repeat=1)
        ):
            round_[0], round_[-1] = round_[-1], round_[0]
        cells.extend(round_)
    return cells
