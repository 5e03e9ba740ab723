"""Query parameters, parsed as the contract says (CONTRACT.md, "Parameters").

One grammar for every integer: `0|[1-9][0-9]{0,8}` on the percent-decoded value (ASCII digits,
no sign, no spaces, no leading zeros). For each of the endpoint's parameters, in contract
order: given more than once → grammar → bounds; then the total-wait cap (`max_service_ms` in
the operation's x-lab). The first failure raises BadParam, which a target answers with 400 and
`BadParam.body()`. Unknown parameters are ignored.

Pass the query as (name, value) pairs with repeats kept: Starlette/FastAPI
`request.query_params.multi_items()`, Flask/Quart `request.args.items(multi=True)`,
aiohttp `request.query.items()`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lab.contract import Endpoint
from labkit.errors import LabError

INTEGER = re.compile(r"0|[1-9][0-9]{0,8}")  # [0-9] is ASCII only, unlike \d


class BadParam(LabError):
    """A query parameter breaks the contract: 400, the body names it."""

    status = 400

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message, param=param)
        self.param = param


def parse(endpoint: Endpoint, query: Iterable[tuple[str, str]]) -> dict[str, int]:
    """The endpoint's parameters, defaults filled in. Raises BadParam for the first problem."""
    given: dict[str, list[str]] = {}
    for name, raw in query:
        given.setdefault(name, []).append(raw)
    values: dict[str, int] = {}
    for p in endpoint.params:
        raws = given.get(p.name)
        if raws is None:
            values[p.name] = p.default
            continue
        if len(raws) > 1:
            raise BadParam(p.name, f"{p.name} must be given once")
        if not INTEGER.fullmatch(raws[0]):
            raise BadParam(p.name, f"{p.name} must be an integer without sign or leading zeros")
        value = int(raws[0])
        problem = p.check(value)
        if problem:
            raise BadParam(p.name, problem)
        values[p.name] = value
    check_cap(endpoint, values)
    return values


def check_cap(endpoint: Endpoint, values: dict[str, int]) -> None:
    """The contract's total-wait cap: the service expression (e.g. `n*ms`) evaluated with the
    request's values must not exceed the operation's `max_service_ms`."""
    cap, service = endpoint.max_service_ms, endpoint.service
    if cap is None or service is None:
        return
    total = endpoint.service_ms(values)
    if total is not None and total > cap:
        names = service.split("*")
        raise BadParam(names[0], f"{' * '.join(names)} must be at most {cap}")
