"""A deliberately broken target for tests/conformance/test_suite_bites.py: each endpoint here
lies in a way the conformance suite must catch. It is never discovered (it has no target.toml)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from fastapi import FastAPI

app = FastAPI()


@app.get("/health")
async def health() -> dict[str, Any]:
    return {"endpoint": "health", "pid": os.getpid(), "status": "ok"}


@app.get("/async")
async def blocks_the_loop(ms: int = 100) -> dict[str, Any]:
    time.sleep(ms / 1000)  # claims to be unbounded, but holds the event loop
    return {"endpoint": "async", "pid": os.getpid(), "ms": ms}


@app.get("/gather")
async def answers_early(ms: int = 100, n: int = 10) -> dict[str, Any]:
    for _ in range(n):  # fire and forget: the waits go on after the answer
        asyncio.get_running_loop().create_task(asyncio.sleep(ms / 1000))
    return {"endpoint": "gather", "pid": os.getpid(), "ms": ms, "n": n}


@app.get("/sync")
def under_claims(ms: int = 100) -> dict[str, Any]:
    time.sleep(ms / 1000)  # runs 40 at a time in anyio's pool, but /info below says 1
    return {"endpoint": "sync", "pid": os.getpid(), "ms": ms}


@app.get("/info")
async def info() -> dict[str, Any]:
    return {"capacity": {"async": None, "gather": None, "sync": 1}}
