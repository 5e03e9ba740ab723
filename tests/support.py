"""Helpers for the tests: the lab's timed probes, and a look inside JSON bodies."""

from __future__ import annotations

from typing import Any

from lab.probe import Reply, batch, get

__all__ = ["Reply", "batch", "get", "string_values"]


def string_values(node: Any) -> set[str]:
    """Every string anywhere in a decoded JSON document."""
    if isinstance(node, str):
        return {node}
    if isinstance(node, dict):
        return set().union(*(string_values(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(string_values(v) for v in node), set())
    return set()
