"""An honest, strict-contract (v1.2) target for tests/conformance/test_suite_bites.py, and the
liars made from it: LAB_LIES (comma-separated) plants lies, each a one-line change the
conformance suite must catch. Never discovered (no target.toml). Run: uvicorn app:app --workers W
--timeout-graceful-shutdown 2; WORKERS and GRACEFUL_TIMEOUT_S say the same to /info.

Lies: pool-8x (/cpu-pool claims 8x its processes), cpu-unbounded (inline /cpu claims null
while it holds the loop), upstream-sleep (/upstream sleeps instead of calling), float-ms
(reads ms=1.0), last-repeat (takes the last of repeated params), head-200 (answers HEAD as
GET), no-cap (no total-wait cap), plain-404 (a text 404), ignore-sigterm (ignores SIGTERM)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import aiohttp
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

from lab.contract import Endpoint, load
from labkit import knobs, pool
from labkit.work import fnv1a

CONTRACT = load()
BY_PATH = {e.path: e for e in CONTRACT.endpoints}
GRAMMAR = re.compile(CONTRACT.integer_pattern)
LIES = set(filter(None, os.environ.get("LAB_LIES", "").split(",")))
ID_HEADER = "X-Lab-Request-Id"
EXECUTOR_THREADS = 4


class Bad(Exception):
    def __init__(self, param: str, message: str) -> None:
        self.body = {"error": message, "param": param}


class Worker:
    pool: ProcessPoolExecutor
    session: aiohttp.ClientSession


worker = Worker()


def parse(endpoint: Endpoint, request: Request) -> dict[str, int]:
    values = {}
    for p in endpoint.params:
        raws = request.query_params.getlist(p.name)
        if not raws:
            values[p.name] = p.default
            continue
        if len(raws) > 1 and "last-repeat" not in LIES:
            raise Bad(p.name, CONTRACT.error("repeated", name=p.name))
        raw = raws[-1]
        if "float-ms" in LIES and p.name == "ms" and re.fullmatch(r"[0-9]+\.[0-9]+", raw):
            raw = str(int(float(raw)))
        if not GRAMMAR.fullmatch(raw):
            raise Bad(p.name, CONTRACT.error("grammar", name=p.name))
        value = int(raw)
        if not p.minimum <= value <= p.maximum:
            raise Bad(
                p.name, CONTRACT.error("bounds", name=p.name, minimum=p.minimum, maximum=p.maximum)
            )
        values[p.name] = value
    if endpoint.over_cap(values) and "no-cap" not in LIES:
        errors = CONTRACT.extensions["errors"]
        raise Bad(
            errors["max-service-param"],
            CONTRACT.error("max-service", max_service_ms=endpoint.max_service_ms),
        )
    return values


async def call_upstream(ms: int, request_id: str | None) -> int:
    url = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001") + f"/delay?ms={ms}"
    headers = {ID_HEADER: request_id} if request_id else {}
    async with worker.session.get(url, headers=headers) as response:
        await response.read()
        return response.status


def info() -> dict[str, Any]:
    w = knobs.workers()
    processes = knobs.pool_processes()
    threads = int(anyio.to_thread.current_default_thread_limiter().total_tokens)
    capacity = {
        "hello": None,
        "sync": w * threads,
        "async": None,
        "blocking": w,
        "executor": w * EXECUTOR_THREADS,
        "gather": None,
        "sequential": None,
        "cpu": None if "cpu-unbounded" in LIES else w,
        "cpu-pool": w * processes * (8 if "pool-8x" in LIES else 1),
        "upstream": None,
        "upstream-seq": None,
    }
    return {
        "target": "kit",
        "profile": "bites",
        "framework": "starlette",
        "framework_version": "0",
        "server": "uvicorn",
        "server_version": "0",
        "language": "python",
        "language_version": "3",
        "workers": w,
        "threads": threads,
        "executor_threads": EXECUTOR_THREADS,
        "pool_processes": processes,
        "cpus": knobs.cpus(),
        "capacity": capacity,
        "graceful_timeout_s": float(os.environ.get("GRACEFUL_TIMEOUT_S", "2")),
    }


async def handle(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    v = parse(endpoint, request)
    s = v.get("ms", 0) / 1000
    match endpoint.name:
        case "hello":
            return {"message": "hello, world"}
        case "health":
            return {"status": "ok"}
        case "info":
            return info()
        case "sync":
            await anyio.to_thread.run_sync(time.sleep, s)
        case "async":
            await asyncio.sleep(s)
        case "blocking":
            time.sleep(s)
        case "executor":
            await asyncio.get_running_loop().run_in_executor(None, time.sleep, s)
        case "gather":
            await asyncio.gather(*(asyncio.sleep(s) for _ in range(v["n"])))
        case "sequential":
            for _ in range(v["n"]):
                await asyncio.sleep(s)
        case "cpu":
            return {**v, "result": fnv1a(v["n"])}
        case "cpu-pool":
            loop = asyncio.get_running_loop()
            return {**v, "result": await loop.run_in_executor(worker.pool, fnv1a, v["n"])}
        case "upstream" | "upstream-seq":
            rid = request.headers.get(ID_HEADER)
            if "upstream-sleep" in LIES:
                await asyncio.sleep(s)
                statuses = [200] * v["n"]
            elif endpoint.name == "upstream":
                statuses = list(
                    await asyncio.gather(*(call_upstream(v["ms"], rid) for _ in range(v["n"])))
                )
            else:
                statuses = [await call_upstream(v["ms"], rid) for _ in range(v["n"])]
            return {**v, "statuses": statuses}
    return v


async def lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            loop = asyncio.get_running_loop()
            loop.set_default_executor(ThreadPoolExecutor(EXECUTOR_THREADS))
            worker.pool = pool.start(knobs.pool_processes())
            worker.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            if "ignore-sigterm" in LIES:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await worker.session.close()
            pool.stop(worker.pool)
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    path, method = scope["path"], scope["method"]
    endpoint = BY_PATH.get(path)
    errors = CONTRACT.extensions["errors"]
    if endpoint is None and "plain-404" in LIES:
        response = PlainTextResponse("Not Found", 404)
    elif endpoint is None:
        response = JSONResponse({"error": errors["not-found"], "path": path}, 404)
    elif method != "GET" and not (method == "HEAD" and "head-200" in LIES):
        body = {"error": errors["method-not-allowed"], "method": method}
        response = JSONResponse(body, 405, headers={"Allow": "GET"})
    else:
        try:
            body = await handle(endpoint, Request(scope, receive))
            response = JSONResponse({"endpoint": endpoint.name, "pid": os.getpid(), **body})
        except Bad as bad:
            response = JSONResponse(bad.body, 400)
    await response(scope, receive, send)
