"""The concurrency lab: contract, target discovery, server lifecycle, benchmark runner."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
