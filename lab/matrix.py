"""Benchmark matrices: named files in k6/matrices/ expanded into cells, one cell being one
fresh server measured under one load. Cells are plain data so a run can be resumed."""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lab import ROOT, capacities
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
    _: KW_ONLY  # the optional axes below are named, never positional
    iterations: int | None = None  # requests per VU (k6 per-vu-iterations); None: duration
    python: str = ""  # interpreter label (lab.interpreters); "" = the default environment

    @property
    def series(self) -> str:
        """target/profile, and the interpreter when the cell names one: fastapi/uvicorn+py3.13."""
        return f"{self.target}/{self.profile}{python_suffix(self.python)}"

    @property
    def key(self) -> str:
        """The cell without its repeat: what its repeats, and the same cell in another run,
        share (a row's CellResult.key reads it back from its id)."""
        params = ",".join(f"{k}={v}" for k, v in self.params)
        load_ = f"rate={self.rate},vus={self.vus}" if self.rate else f"vus={self.vus}"
        if self.iterations:
            load_ += f",iterations={self.iterations}"
        return f"{self.series}/{self.endpoint}?{params}@{load_}"

    @property
    def id(self) -> str:
        return f"{self.key}#{self.repeat}"

    @property
    def duration_s(self) -> float:
        return parse_duration(self.duration)

    @property
    def expected_s(self) -> float:
        """How long the load should take: the duration, or for a fixed number of requests
        that many service times (+ 2 ms of HTTP each) one after another, capped by it."""
        if not self.iterations:
            return self.duration_s
        service_ms = load()[self.endpoint].service_ms(dict(self.params)) or 0.0
        return min(self.duration_s, self.iterations * (service_ms + 2.0) / 1000)

    def param(self, name: str) -> int | None:
        return dict(self.params).get(name)

    def query(self, **override: int) -> str:
        """The cell's query string ('' without parameters); `override` replaces the values of
        parameters the cell has (others are ignored)."""
        values = {k: override.get(k, v) for k, v in self.params}
        return "?" + "&".join(f"{k}={v}" for k, v in values.items()) if values else ""

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
    # Explicit cells ([[cells]]: name, target, profile, endpoint, params, vus, iterations,
    # duration) instead of the cross product above: a post's experiment (lab/report/posts.py).
    cells: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # knobs for every server, e.g. WORKERS
    post: dict[str, Any] = field(default_factory=dict)  # the published post and its claims
    # Interpreter labels for Python targets (["3.11", "3.13"]); empty = the default environment.
    python: list[str] = field(default_factory=list)
    # The longest a cell the model says would complete too few requests may be lengthened to
    # ("" = the model's own cap, MAX_CELL_S): how a quick matrix keeps its time budget.
    max_duration: str = ""
    # How long k6 lets the requests in flight at the end of the duration finish ("" = lab.js's
    # GRACEFUL_STOP, 3 s): a saturated server serves at its full rate meanwhile, so a
    # shorter grace leaves the rate as it was and saves the rest (quick.toml says what it costs).
    graceful_stop: str = ""
    # The longest a server that compiles while it runs (/info's jit) is warmed up before its
    # calibration ("" = lab.run.warmup.MAX_S, 30 s): a cell not steady by then says so.
    warm_up_max: str = ""
    # Run a waiting endpoint only where its capacity differs from every one run before it in
    # the profile (same_capacity): the model predicts such cells alike, so a matrix with a
    # budget (quick) asks that question once, and names the cells it leaves to `full`.
    distinct_capacities: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def names() -> list[str]:
    return sorted(p.stem for p in MATRIX_DIR.glob("*.toml"))


def load_matrix(name: str) -> Matrix:
    """A named matrix of k6/matrices, or a .toml file given by its path; every key and value
    checked here, so that a bad file is one line before anything starts."""
    path = Path(name) if name.endswith(".toml") else MATRIX_DIR / f"{name}.toml"
    if not path.is_file():
        if name.endswith(".toml"):
            raise MatrixError(f"no matrix file at {path}")
        raise UnknownChoice("matrix", name, names())
    where = str(path) if name.endswith(".toml") else f"matrix {name}"
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MatrixError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(f"{where}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise MatrixError(f"{where}: cannot be read: {exc.strerror}") from None
    return from_toml(path.stem, data, where)


_NAMES_OR_ALL = "'all', a name or a list of names"
_KEYS = {
    "description": "a string",
    "targets": _NAMES_OR_ALL,
    "profiles": "'default', 'all', a name or a list of names",
    "endpoints": _NAMES_OR_ALL,
    "vus": "an integer >= 1 or a list of them",
    "rate": "an integer >= 1 or a list of them",
    "duration": "a duration such as 10s",
    "repeat": "an integer >= 1",
    "params": "a table such as {ms = 100, cpu = {n = 1000}}",
    "cells": "a list of [[cells]] tables (a post's explicit cells)",
    "env": "a table of knobs such as {WORKERS = 4}",
    "post": "a table: the post's citation and its claims (see lab/report/posts.py)",
    "python": "an interpreter label such as '3.13' or a list of them",
    "max_duration": "a duration such as 8s: the longest a cell may be lengthened",
    "graceful_stop": "a duration such as 1s: how long k6 lets the requests in flight finish",
    "warm_up_max": "a duration such as 6s: the longest a JIT's warm-up may take",
    "distinct_capacities": "true or false: run a waiting endpoint only where its capacity "
    "differs from those run before it in the profile",
}


def _names(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
    )


def _ints(value: Any) -> list[int] | None:
    values = value if isinstance(value, list) else [value]
    ok = values and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values)
    return list(values) if ok else None


def _check_params(params: Any, where: str) -> None:
    def bad(what: str) -> MatrixError:
        return MatrixError(f"{where}: {what}; params must be {_KEYS['params']}")

    if not isinstance(params, dict):
        raise bad(f"params = {params!r}")
    contract = load()
    known = {p.name for e in contract.endpoints for p in e.params}
    endpoints = {e.name for e in contract.endpoints}
    for key, value in params.items():
        if isinstance(value, dict):
            if key not in endpoints:
                raise bad(f"params.{key} is not an endpoint")
            for name, v in value.items():
                if name not in known:
                    raise bad(
                        f"params.{key}.{name} is not a parameter ({', '.join(sorted(known))})"
                    )
                if isinstance(v, bool) or not isinstance(v, int):
                    raise bad(f"params.{key}.{name} = {v!r} is not an integer")
        elif key not in known:
            raise bad(f"params.{key} is not a parameter ({', '.join(sorted(known))})")
        elif isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"params.{key} = {value!r} is not an integer")


def from_toml(name: str, data: dict[str, Any], where: str = "matrix") -> Matrix:
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise MatrixError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(_KEYS)})")

    def bad(key: str) -> MatrixError:
        return MatrixError(f"{where}: {key} = {data[key]!r}: {key} must be {_KEYS[key]}")

    if "description" in data and not isinstance(data["description"], str):
        raise bad("description")
    for key in ("targets", "profiles", "endpoints"):
        if key in data and not _names(data[key]):
            raise bad(key)
    for key in ("vus", "rate"):
        if key in data and _ints(data[key]) is None:
            raise bad(key)
    if "repeat" in data and (
        isinstance(data["repeat"], bool)
        or not isinstance(data["repeat"], int)
        or data["repeat"] < 1
    ):
        raise bad("repeat")
    if "duration" in data:
        if not isinstance(data["duration"], str):
            raise bad("duration")
        try:
            if parse_duration(data["duration"]) <= 0:
                raise bad("duration")
        except MatrixError:
            raise bad("duration") from None
    if "params" in data:
        _check_params(data["params"], where)
    if "cells" in data and not (
        isinstance(data["cells"], list) and all(isinstance(c, dict) for c in data["cells"])
    ):
        raise bad("cells")
    if "env" in data and not (
        isinstance(data["env"], dict)
        and all(isinstance(v, str | int) and not isinstance(v, bool) for v in data["env"].values())
    ):
        raise bad("env")
    if "post" in data and not isinstance(data["post"], dict):
        raise bad("post")
    for key, least in (("max_duration", 0.0), ("graceful_stop", -1.0), ("warm_up_max", 0.0)):
        if key in data:
            try:
                if not isinstance(data[key], str) or parse_duration(data[key]) <= least:
                    raise bad(key)
            except MatrixError:
                raise bad(key) from None
    if "distinct_capacities" in data and not isinstance(data["distinct_capacities"], bool):
        raise bad("distinct_capacities")
    if "python" in data:
        if isinstance(data["python"], str):
            data = {**data, "python": [data["python"]]}
        if not _names(data["python"]):
            raise bad("python")
    fields = {k: v for k, v in data.items() if k != "rate"}
    if "vus" in fields:
        fields["vus"] = _ints(fields["vus"])
    matrix = Matrix(name=name, **fields)
    if "rate" in data:
        matrix.rates = list(_ints(data["rate"]) or [])
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


_SPEC_KEYS = {"name", "target", "profile", "endpoint", "params", "vus", "iterations", "duration"}


def spec_cell(
    spec: dict[str, Any], matrix: Matrix, contract: Contract, targets: list[Target]
) -> Cell:
    """One explicit [[cells]] entry as a Cell: its target, profile (default: the target's),
    endpoint, params, VUs, requests per VU and duration (default: the matrix's)."""
    name = spec.get("name", "?")
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise MatrixError(f"cell {name}: unknown key {unknown[0]!r}")
    for key in ("target", "endpoint"):
        if not isinstance(spec.get(key), str):
            raise MatrixError(f"cell {name}: {key} is required")
    target = find(spec["target"], targets)
    profile = target.profile(spec.get("profile")).name
    bench = [e.name for e in contract.bench_endpoints()]
    if spec["endpoint"] not in bench:
        raise UnknownChoice("endpoint", spec["endpoint"], bench)
    vus, iterations = spec.get("vus", 1), spec.get("iterations")
    for key, value in (("vus", vus), ("iterations", iterations)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise MatrixError(f"cell {name}: {key} must be an integer >= 1, got {value!r}")
    duration = str(spec.get("duration", matrix.duration))
    parse_duration(duration)
    params = _params(spec["endpoint"], Matrix(name, params=spec.get("params", {})), contract)
    return Cell(
        target.name,
        profile,
        spec["endpoint"],
        params,
        vus,
        None,
        duration,
        1,
        iterations=iterations,
    )


def same_capacity(
    target: str,
    profile: str,
    endpoints: list[str],
    matrix: Matrix,
    contract: Contract,
    table: capacities.Table | None = None,
) -> dict[str, str]:
    """{endpoint: the earlier endpoint with the same capacity} among the waiting endpoints
    (kind sleep) of one profile: the same parameters, the same service time and the same
    formula in CONTRACT.md's capacity tables (null, unbounded, included). The model predicts
    two such cells alike: their capacity (or the VUs) over the same wait. table: those tables
    read once for many profiles (None: read them here)."""
    row = (capacities.table() if table is None else table).get((target, profile), {})
    first: dict[tuple[Any, ...], str] = {}
    repeats: dict[str, str] = {}
    for name in endpoints:
        endpoint = contract[name]
        if endpoint.kind != "sleep" or name not in row:
            continue
        params = dict(_params(name, matrix, contract))
        key = (row[name], tuple(sorted(params)), endpoint.service_ms(params))
        if key in first:
            repeats[name] = first[key]
        else:
            first[key] = name
    return repeats


def not_run(matrix: Matrix, targets: list[Target] | None = None) -> list[str]:
    """The cells a matrix with distinct_capacities leaves out, each with the endpoint whose
    cell measures its capacity: 'gin/release/async: as /sync (unbounded)'."""
    if not matrix.distinct_capacities or matrix.cells:
        return []
    contract = load()
    table = capacities.table()
    lines = []
    for target, profile, endpoints in _profiles(matrix, targets, contract):
        repeats = same_capacity(target.name, profile, endpoints, matrix, contract, table)
        for name, first in repeats.items():
            formula = table[(target.name, profile)][name] or "unbounded"
            lines.append(f"{target.name}/{profile}/{name}: as /{first} ({formula})")
    return lines


def _profiles(
    matrix: Matrix, targets: list[Target] | None, contract: Contract
) -> list[tuple[Target, str, list[str]]]:
    """(target, profile, endpoints) for every profile a cross-product matrix runs."""
    targets = discover() if targets is None else targets
    if matrix.targets == "all":
        chosen = targets
    else:
        wanted = [matrix.targets] if isinstance(matrix.targets, str) else matrix.targets
        chosen = [find(name, targets) for name in wanted]
    endpoints = _pick("endpoint", matrix.endpoints, [e.name for e in contract.bench_endpoints()])
    out = []
    for target in chosen:
        if matrix.profiles == "default":
            profiles = [target.default_profile]
        else:
            profiles = _pick(f"{target.name} profile", matrix.profiles, list(target.profiles))
        out += [(target, profile, endpoints) for profile in profiles]
    return out


def expand(matrix: Matrix, targets: list[Target] | None = None, seed: int = 0) -> list[Cell]:
    """Every cell of the matrix. Repetitions are interleaved in a shuffled order (seeded, so
    a resumed run sees the same order), never run back to back."""
    contract = load()
    targets = discover() if targets is None else targets
    if matrix.cells:
        base = [spec_cell(spec, matrix, contract, targets) for spec in matrix.cells]
        return [replace(c, repeat=r) for r in range(1, matrix.repeat + 1) for c in base]
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
    table = capacities.table() if matrix.distinct_capacities else None
    for target, profile, endpoints in _profiles(matrix, targets, contract):
        # Only Python targets have the interpreter axis; a Go cell runs once.
        pythons = (matrix.python or [""]) if target.language == "python" else [""]
        if matrix.distinct_capacities:
            repeats = same_capacity(target.name, profile, endpoints, matrix, contract, table)
            endpoints = [e for e in endpoints if e not in repeats]
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
                                python=python,
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
