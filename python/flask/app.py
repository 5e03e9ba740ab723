"""Flask target. A WSGI app: every request holds one request thread from start to end, and an
`async def` view runs to completion inside it, on an event loop asgiref makes for that one
request. Views parse their query with labkit.params (400 through an error handler); the
endpoints' work is labkit's.

Per-worker resources (process pool, HTTP client, fan-out threads, the database pool) are
made when a worker starts, never at import: gunicorn's hooks (labkit.gunicorn_hooks, shared
by the WSGI targets) call start()/stop(), granian calls the factory granian_app(), and the
dev server (`python app.py`) calls them around app.run."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flask import Flask, request

from lab.contract import load
from labkit import db, endpoints, errors, params, threaded, upstream

CONTRACT = load()
Body = dict[str, Any]

app = Flask(__name__)
app.json.sort_keys = False  # type: ignore[attr-defined]  # keep "endpoint", "pid" first


def start(workers: int, threads: int | None, graceful_s: float | None) -> None:
    app.extensions["lab"] = threaded.start("flask", workers, threads, graceful_s)


def stop(wait_for_pool: bool = True) -> None:
    if worker := app.extensions.pop("lab", None):
        threaded.stop(worker, wait_for_pool)


def granian_app() -> Flask:
    """granian's --factory target: each granian worker calls it in its main thread as it
    starts (for granian what labkit.gunicorn_hooks' post_worker_init is for gunicorn). The
    worker's resources end with its process: granian has no worker-exit hook for WSGI."""
    app.extensions["lab"] = threaded.start_granian("flask")
    return app


def worker() -> threaded.Worker:
    if "lab" not in app.extensions:
        raise RuntimeError(
            "worker not started: run gunicorn -c python:labkit.gunicorn_hooks, or granian_app"
        )
    return app.extensions["lab"]  # type: ignore[no-any-return]


@app.before_request
def get_only() -> tuple[Body, int, dict[str, str]] | None:
    # Flask answers HEAD and OPTIONS on its own, and 404/405 in HTML: the contract's answers.
    return errors.refusal(request.method, request.path)


@app.errorhandler(errors.LabError)
def refused(exc: errors.LabError) -> tuple[dict[str, str], int]:
    return exc.body(), exc.status  # a bad parameter (400), the upstream (502, 504)


@app.errorhandler(500)
def internal_error(exc: Exception) -> tuple[dict[str, str], int]:
    return errors.INTERNAL, 500


def args(name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], request.args.items(multi=True))


def rid() -> str | None:
    return upstream.request_id(request.headers.get(upstream.REQUEST_ID))


@app.get("/hello")
def hello() -> Body:
    return endpoints.hello()


@app.get("/sync")
def sync() -> Body:
    return endpoints.sync(**args("sync"))


@app.get("/async")
async def async_() -> Body:
    return await endpoints.wait(**args("async"))


@app.get("/blocking")
async def blocking() -> Body:
    # The anti-pattern, for comparison: here it stops only this request's own event loop,
    # which holds this request's thread anyway, so it costs no more than /sync.
    return endpoints.blocking(**args("blocking"))


@app.get("/executor")
async def executor() -> Body:
    # Each async view runs on a new event loop of its own (asgiref's async_to_sync), so the
    # "default executor" is made for this one request: give it the size /info reports.
    executor = ThreadPoolExecutor(worker().executor_threads)
    asyncio.get_running_loop().set_default_executor(executor)
    return await endpoints.executor(**args("executor"))


@app.get("/gather")
async def gather() -> Body:
    return await endpoints.gather(**args("gather"))


@app.get("/sequential")
async def sequential() -> Body:
    return await endpoints.sequential(**args("sequential"))


@app.get("/cpu")
def cpu() -> Body:
    return endpoints.cpu(**args("cpu"))  # inline: holds the GIL while it runs


@app.get("/cpu-pool")
def cpu_pool() -> Body:
    return endpoints.cpu_pool_sync(worker().pool, **args("cpu-pool"))


@app.get("/upstream")
def upstream_() -> Body:
    w = worker()
    return endpoints.upstream_sync(w.client, w.fan_out, **args("upstream"), rid=rid())


@app.get("/upstream-seq")
def upstream_seq() -> Body:
    return endpoints.upstream_seq_sync(worker().client, **args("upstream-seq"), rid=rid())


@app.get("/db")
def db_() -> Body:
    return db.sleep_sync(worker().db, **args("db"), endpoint="db")  # psycopg, psycopg_pool


@app.get("/db-blocking")
def db_blocking() -> Body:
    # A def view has no event loop to block: the same query on the same pool as /db.
    return db.sleep_sync(worker().db, **args("db-blocking"), endpoint="db-blocking")


@app.get("/db-rows")
def db_rows() -> Body:
    return db.rows_sync(worker().db, **args("db-rows"))


@app.get("/health")
def health() -> Body:
    return endpoints.health()


@app.get("/info")
def info() -> Body:
    return threaded.info("flask", worker(), server_name=app.config.get("LAB_SERVER"))


def serve_dev() -> None:
    """Flask's threaded development server, as tutorials run it: one process."""
    app.config["LAB_SERVER"] = "werkzeug"
    start(workers=1, threads=None, graceful_s=0.0)  # it drops requests in flight when it stops
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))
    threaded.serve_dev(lambda: app.run(host, port), lambda: stop(wait_for_pool=False))


if __name__ == "__main__":
    serve_dev()
