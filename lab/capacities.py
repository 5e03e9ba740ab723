"""CONTRACT.md's capacity tables: for every target and profile, each endpoint's capacity as a
formula of what /info states (W workers, T threads, ...). The conformance suite evaluates
each formula with a running server's /info and fails where the table and the server
disagree; a matrix reads the formulas to tell which cells would measure the same capacity."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lab import ROOT

CONTRACT = ROOT / "CONTRACT.md"
TABLE_HEAD = "| target / profile |"
# A formula's letters and where /info has them: D is the database pool per worker, C the JVM's
# virtual-thread carriers (a virtual thread pinned by a native call holds one), B the threads of
# Reactor's bounded elastic scheduler (WebFlux's home for a blocking call off the event loop).
_VARIABLES = {
    "W": ("workers",),
    "T": ("threads",),
    "E": ("executor_threads",),
    "P": ("pool_processes",),
    "D": ("database", "pool"),
    "C": ("carriers",),
    "B": ("bounded_elastic_threads",),
}
_TERM = r"(?:[WTEPDCB]|min\([WTEPDCB], [WTEPDCB]\))"
_FORMULA = re.compile(rf"{_TERM}(?:·{_TERM})*")


def without_notes(text: str) -> str:
    """'W·T (anyio, 40)' -> 'W·T'; a note is a parenthesis after a space (`min(T, P)` and
    `upstream(-seq)` stay), nested parentheses included."""
    out, depth = [], 0
    for i, ch in enumerate(text):
        if depth == 0 and ch == "(" and text[i - 1 : i] == " ":
            depth = 1
        elif depth:
            depth += {"(": 1, ")": -1}.get(ch, 0)
        else:
            out.append(ch)
    return "".join(out).strip()


# {(target, profile): {endpoint: formula or None}}
Table = dict[tuple[str, str], dict[str, str | None]]


def table(path: Path = CONTRACT) -> Table:
    """{(target, profile): {endpoint: formula or None}} from CONTRACT.md's capacity tables
    (every table whose header starts with '| target / profile |': the sleeps' and CPU's, the
    database's), merged; `min(T, P)` is kept, other parenthesised notes are dropped."""
    lines = path.read_text().splitlines()
    merged: dict[tuple[str, str], dict[str, str | None]] = {}
    starts = [i for i, line in enumerate(lines) if line.startswith(TABLE_HEAD)]
    if not starts:
        raise ValueError(f"{path.name} has no capacity table (a header {TABLE_HEAD!r})")
    for start in starts:
        for case, formulas in _read_table(lines, start).items():
            merged.setdefault(case, {}).update(formulas)
    return merged


def _read_table(lines: list[str], start: int) -> dict[tuple[str, str], dict[str, str | None]]:
    columns = [c.strip() for c in lines[start].strip("|").split("|")][1:]
    endpoints = [
        ["upstream", "upstream-seq"] if c == "upstream(-seq)" else c.split(", ") for c in columns
    ]
    rows: dict[tuple[str, str], dict[str, str | None]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        head, *cells = [c.strip() for c in line.strip("|").split("|")]
        targets, profiles = (without_notes(part) for part in head.split(" / ", 1))
        formulas: dict[str, str | None] = {}
        for names, cell in zip(endpoints, cells, strict=True):
            formula = without_notes(cell)
            formula = None if formula == "null" else formula.replace("GOMAXPROCS", "P")
            if formula is not None and not _FORMULA.fullmatch(formula):
                raise ValueError(f"CONTRACT.md capacity table: cannot read {cell!r} in {head!r}")
            formulas.update(dict.fromkeys(names, formula))
        for target in targets.split(","):
            for profile in profiles.split(","):
                rows[(target.strip(), profile.strip())] = formulas
    return rows


def _value(info: dict[str, Any], letter: str) -> int:
    node: Any = info
    for key in _VARIABLES[letter]:
        node = node[key]
    return int(node)


def evaluate(formula: str | None, info: dict[str, Any]) -> int | None:
    """A formula of the tables evaluated with a server's /info (W, T, E, P, and D: the
    database pool per worker, /info's database.pool)."""
    if formula is None:
        return None

    def factor(term: str) -> int:
        if term.startswith("min("):
            a, b = term[4:-1].split(", ")
            return min(_value(info, a), _value(info, b))
        return _value(info, term)

    result = 1
    for term in formula.split("·"):
        result *= factor(term)
    return result
