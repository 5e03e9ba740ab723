"""Query-parameter parsing for targets whose framework has no validation of its own.
Bounds and defaults come from the contract, so no target writes them down."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lab.contract import Endpoint

_INTEGER = re.compile(r"-?[0-9]{1,12}")


class BadParam(ValueError):
    """A query parameter is not an integer or is out of bounds."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message

    def body(self) -> dict[str, str]:
        return {"error": self.message, "param": self.param}


def parse(endpoint: Endpoint, query: Mapping[str, str]) -> dict[str, int]:
    """The endpoint's parameters from a query mapping, defaults filled in.
    Raises BadParam naming the first bad parameter."""
    values: dict[str, int] = {}
    for p in endpoint.params:
        raw = query.get(p.name)
        if raw is None:
            values[p.name] = p.default
            continue
        if not _INTEGER.fullmatch(raw):
            raise BadParam(p.name, f"{p.name} must be an integer, got {raw[:40]!r}")
        value = int(raw)
        problem = p.check(value)
        if problem:
            raise BadParam(p.name, problem)
        values[p.name] = value
    return values
