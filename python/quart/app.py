"""Quart target. Plain `def` views run in the event loop's default executor, `async def` views
on the event loop. Quart validates nothing: views parse their query with labkit.params (400
through an error handler). The endpoints' work is labkit's.

Quart wraps every non-coroutine view in quart.utils.run_sync, which awaits
`loop.run_in_executor(None, ...)`: the loop's default executor, the same one /executor uses.
So here THREADS and EXECUTOR_THREADS size one and the same pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from quart import Quart, request

from lab.contract import load
from labkit import endpoints, errors, eventloop, knobs, params, upstream

CONTRACT = load()
Reply = tuple[dict[str, Any], int, dict[str, str]]

app = Quart(__name__, static_folder=None)
app.json.sort_keys = False  # type: ignore[attr-defined]  # keep "endpoint", "pid" first
worker: eventloop.Worker  # this worker process's resources, while it serves (below)


@app.while_serving
async def serve() -> AsyncIterator[None]:
    global worker  # every worker process runs this on its own event loop
    size = knobs.shared_executor_threads()
    async with eventloop.serving(size, sync_threads=size, framework="quart") as worker:
        yield


@app.before_request
async def get_only() -> Reply | None:
    # Quart answers HEAD and OPTIONS on its own, and 404/405 in HTML: the contract's answers.
    return errors.refusal(request.method, request.path)


def query(name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.args.items(multi=True))


@app.get("/sync")
def sync() -> dict[str, Any]:
    return endpoints.sync(**query("sync"))  # a def: run_sync runs it in the default executor


def on_loop(name: str) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An `async def` view running labkit's coroutine for `name` on the worker's loop."""

    async def view() -> dict[str, Any]:
        rid = upstream.request_id(request.headers.get(upstream.REQUEST_ID))
        return await eventloop.ENDPOINTS[name](worker, query(name), rid)

    return view


for name in eventloop.ENDPOINTS:
    app.add_url_rule(CONTRACT[name].path, name, on_loop(name), methods=["GET"])


@app.get("/info")
async def info() -> dict[str, Any]:
    return eventloop.info("quart", worker)


@app.errorhandler(errors.LabError)
async def refused(exc: errors.LabError) -> tuple[dict[str, str], int]:
    return exc.body(), exc.status  # a bad parameter (400), the upstream (502, 504)


@app.errorhandler(500)
async def internal_error(exc: Exception) -> tuple[dict[str, str], int]:
    return errors.INTERNAL, 500


assert {r.rule for r in app.url_map.iter_rules()} == errors.PATHS, "a route per endpoint"
