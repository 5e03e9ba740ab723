"""Reads the endpoint contract (contract/openapi.json): the one place endpoint names,
parameters, defaults and bounds are written down."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from lab import ROOT

CONTRACT_DIR = ROOT / "contract"
OPENAPI = CONTRACT_DIR / "openapi.json"


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    minimum: int
    maximum: int
    description: str = ""
    pattern: str | None = None  # the integer grammar (x-lab.integer-grammar), when written

    def check(self, value: int) -> str | None:
        """Why value is out of bounds, or None when it is fine."""
        if value < self.minimum or value > self.maximum:
            return f"{self.name} must be between {self.minimum} and {self.maximum}"
        return None


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    kind: str  # none | sleep | cpu | upstream | db | meta
    service: str | None  # service time as an expression of the params ("ms", "n*ms", ...)
    params: tuple[Param, ...] = ()
    summary: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    max_service_ms: int | None = None  # the total-wait cap (x-lab), where the contract sets one
    # a plain synchronous handler (x-lab.handler "sync"): on an event loop, a thread of its own
    synchronous: bool = False

    @property
    def bench(self) -> bool:
        """Benchmark endpoints are the ones /info reports a capacity for."""
        return self.kind != "meta"

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def concurrent(self) -> bool:
        """n waits (or upstream calls) at once: the wait is one `ms` however large n is
        (/gather, /upstream), not n of them one after another (n*ms: /sequential)."""
        return self.service == "ms" and self.param("n") is not None

    def defaults(self) -> dict[str, int]:
        return {p.name: p.default for p in self.params}

    def service_ms(self, values: dict[str, int] | None = None) -> float | None:
        """Time one request spends waiting, from the contract's service expression and the
        parameters (defaults filled in); None when it must be measured (CPU work)."""
        v = {**self.defaults(), **(values or {})}
        match self.service:
            case "0":
                return 0.0
            case "ms":
                return float(v["ms"])
            case "n*ms":
                return float(v["n"] * v["ms"])
            case _:
                return None

    def over_cap(self, values: dict[str, int] | None = None) -> bool:
        """The request would wait longer than the endpoint's total-wait cap."""
        service = self.service_ms(values)
        return (
            self.max_service_ms is not None
            and service is not None
            and (service > self.max_service_ms)
        )


@dataclass(frozen=True)
class Contract:
    version: str
    endpoints: tuple[Endpoint, ...]
    extensions: dict[str, Any]

    def __getitem__(self, name: str) -> Endpoint:
        for e in self.endpoints:
            if e.name == name:
                return e
        raise KeyError(name)

    def names(self) -> list[str]:
        return [e.name for e in self.endpoints]

    def bench_endpoints(self) -> list[Endpoint]:
        return [e for e in self.endpoints if e.bench]

    @property
    def integer_pattern(self) -> str:
        """The one grammar every integer query parameter must fully match."""
        return str(self.extensions["integer-grammar"]["pattern"])

    def error(self, kind: str, **values: object) -> str:
        """An error message from the contract's templates (x-lab.errors), e.g.
        error("bounds", name="ms", minimum=0, maximum=10000)."""
        return str(self.extensions["errors"][kind]).format(**values)

    def cpu_vectors(self) -> list[tuple[int, int]]:
        data = json.loads((CONTRACT_DIR / self.extensions["cpu-test-vectors"]).read_text())
        return [(v["n"], v["result"]) for v in data["vectors"]]

    def db_vectors(self) -> list[tuple[int, int, list[int], int]]:
        """/db-rows's test vectors: (n, seed, the first ids read, checksum)."""
        data = json.loads((CONTRACT_DIR / self.extensions["db-test-vectors"]).read_text())
        return [(v["n"], v["seed"], v["ids"], v["checksum"]) for v in data["vectors"]]

    @property
    def database(self) -> dict[str, Any]:
        """How targets reach the database (x-lab.database): url-env, pool-env,
        application-name, timeout-s."""
        return dict(self.extensions["database"])


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    target: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return target


def parse(doc: dict[str, Any]) -> Contract:
    endpoints = []
    for path, item in doc["paths"].items():
        op = item["get"]
        params = []
        for raw in op.get("parameters", []):
            p = _resolve(doc, raw)
            s = p["schema"]
            params.append(
                Param(
                    p["name"],
                    s["default"],
                    s["minimum"],
                    s["maximum"],
                    p.get("description", ""),
                    s.get("pattern"),
                )
            )
        lab = op.get("x-lab", {})
        endpoints.append(
            Endpoint(
                name=op["operationId"],
                path=path,
                kind=lab.get("kind", "meta"),
                service=lab.get("service"),
                params=tuple(params),
                summary=op.get("summary", ""),
                fields=lab.get("fields", {}),
                max_service_ms=lab.get("max_service_ms"),
                synchronous=lab.get("handler") == "sync",
            )
        )
    return Contract(doc["info"]["version"], tuple(endpoints), doc.get("x-lab", {}))


@cache
def load(path: Path = OPENAPI) -> Contract:
    return parse(json.loads(path.read_text()))
