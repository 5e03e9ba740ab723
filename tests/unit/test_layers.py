"""lab/'s layers, as lab/__init__.py maps them: a module imports only from its own layer and the
layers above it (the vocabulary at lab/'s top, then proc/, report/, run/, tools/); cli.py,
which dispatches every command, may import any. Read from the source, lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lab import ROOT

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

LAB = ROOT / "lab"
LAYERS = ["", "proc", "report", "run", "tools"]  # "" = the vocabulary at lab/'s top


def layer_of(module: str) -> int | None:
    """The layer of a lab module name (lab.run.bench -> run), None for the dispatcher."""
    parts = module.split(".")[1:]
    if parts in (["cli"], ["__main__"]):
        return None
    return LAYERS.index(parts[0]) if parts and parts[0] in LAYERS[1:] else 0


def imported(path: Path) -> set[str]:
    """The lab modules a file imports (`from lab.run import bench` -> lab.run.bench)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("lab.")}
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lab"
        ):
            package = node.module in {"lab", *(f"lab.{layer}" for layer in LAYERS[1:])}
            names |= {f"{node.module}.{a.name}" if package else node.module for a in node.names}
    return names


def test_every_layer_imports_only_from_above() -> None:
    wrong = []
    for path in sorted(LAB.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = layer_of(module)
        if mine is None:
            continue
        for name in sorted(imported(path)):
            theirs = layer_of(name)
            if theirs is not None and theirs > mine:
                wrong.append(f"{module} imports {name}")
    assert not wrong, "a layer imports from below it:\n" + "\n".join(wrong)


def test_the_rule_sees_a_wrong_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from lab.run import bench\n    import lab.report.charts\n")
    assert imported(source) == {"lab.run.bench", "lab.report.charts"}
    assert layer_of("lab.run.bench") > layer_of("lab.report.posts") > layer_of("lab.rundir")  # type: ignore[operator]
    assert layer_of("lab.model") == 0 and layer_of("lab.cli") is None
