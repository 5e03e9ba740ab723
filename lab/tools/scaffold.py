"""`lab new-target NAME --like TARGET` (`just new-target`): a new target folder beside an existing
one built on its language's target kit (Python: labkit; Node: node/kit; Java: jvm/kit), copied
from it, and the next steps to make it yours. A Java copy is a Maven module of its own: its
package, artifact and jar are renamed after it and jvm/pom.xml lists it.
Refuses a name that is taken or malformed, and an unknown --like, with one line and exit 2."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from lab import ROOT
from lab.arguments import add_command
from lab.errors import USAGE_ERROR
from lab.targets import MANIFEST, discover

KIT_LANGUAGES = ("python", "node", "java")  # a copied folder is a target: the kit holds the rest
NAME = re.compile(r"[a-z][a-z0-9_]{0,30}")  # a folder name that is also a Python identifier
# Not copied: caches, installed packages, Maven's output and a Java target's own test code
# (jdkhttp's: the suite's liar).
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "target", "test")


# The step the conformance suite checks (tests/conformance/test_capacity_table.py).
CAPACITY_STEP = """a row per profile in CONTRACT.md's capacity tables (the sleeps' and CPU's,
     the database's: each capacity a formula of /info's W, T, E, P, D, C) and one in
     README's pools table: `{name} / PROFILE | ...`, as `curl localhost:8000/info` says"""


class ScaffoldError(Exception):
    """A name that cannot be used; the message says why and what can."""


def new_target(name: str, like: str, root: Path | None = None) -> Path:
    """Copy <language>/<like>/ to <language>/<name>/ (root: another folder to put it in) and
    name the copy; returns the new folder."""
    targets = discover()
    kits = {t.name: t for t in targets if t.language in KIT_LANGUAGES}
    if like not in kits:
        raise ScaffoldError(f"unknown --like {like!r}; choose from: {', '.join(sorted(kits))}")
    if not NAME.fullmatch(name):
        raise ScaffoldError(f"target name must match {NAME.pattern} (a folder name), got {name!r}")
    taken = {t.name for t in targets} | {a for t in targets for a in t.aliases}
    folder = (root or kits[like].folder.parent) / name
    if name in taken:
        raise ScaffoldError(f"{name!r} is already a target or an alias; pick another name")
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists; pick another name")
    shutil.copytree(kits[like].folder, folder, ignore=SKIP)
    if kits[like].language == "java":
        _rename_java(folder, like, name)
    manifest = folder / MANIFEST
    text = manifest.read_text()
    manifest.write_text(f"# {name}: made with `just new-target {name} --like {like}`.\n{text}")
    return folder


def _rename_java(folder: Path, like: str, name: str) -> None:
    """The copy's package (lab.<like> -> lab.<name>), artifact, jar and names in its text, and
    its module in the parent pom (jvm/pom.xml, where there is one beside it)."""
    sources = folder / "src" / "main" / "java" / "lab"
    if (sources / like).is_dir():
        (sources / like).rename(sources / name)
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".java", ".xml", ".toml", ".properties"):
            path.write_text(re.sub(rf"\b{re.escape(like)}\b", name, path.read_text()))
    parent = folder.parent / "pom.xml"
    if parent.is_file():
        text = parent.read_text()
        module = f"    <module>{like}</module>\n"
        if module not in text:
            raise ScaffoldError(f"{parent} has no <module>{like}</module> to add {name} after")
        parent.write_text(text.replace(module, f"{module}    <module>{name}</module>\n", 1))


def next_steps(name: str, like: str, folder: Path, language: str = "python") -> str:
    rel = folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder
    if language == "java":
        return f"""created {rel}/ (a copy of jvm/{like}/: package lab.{name}, .build/{name}.jar,
a module of jvm/pom.xml)
next steps:
  1. edit {rel}/src/main/java/lab/{name}/Main.java: your server's routing, JSON answers,
     404/405/500 and its threads; the endpoints' work, /info and the pools stay jvm/kit's
     (see README, "Adding a framework")
  2. set `framework` in {rel}/{MANIFEST} and in Main.java's App.Config, `concurrency` (one
     line) and the profiles' descriptions; then `just docs` writes it into README's targets table
  3. add the dependency to {rel}/pom.xml (its version from Spring Boot's BOM, which the
     parent imports, or pinned there), then `just setup`: Maven fetches it once into .tools/m2
     (a changed pom runs Maven online until setup has run), and `jvm/mvn -q spotless:apply`
  4. try it: just serve {name}        (then curl 'localhost:8000/info')
  5. {CAPACITY_STEP.format(name=name)}
  6. its conformance tests: just test-target {name}
  7. everything: just test"""
    if language == "node":
        return f"""created {rel}/ (a copy of node/{like}/)
next steps:
  1. edit {rel}/app.js: your framework's routing, JSON answers, 404/405/500; the
     endpoints' work, /info and serving stay node/kit's (see README, "Adding a framework")
  2. set `framework` in {rel}/{MANIFEST} (the package's name; app.js passes it and its
     version to main), `concurrency` (one line) and the profiles' descriptions; then
     `just docs` writes it into README's targets table
  3. add the dependency: cd node && PATH=$PWD/../.tools/node/bin:$PATH npm install
     --save-exact PACKAGE   (then commit node/package.json + node/package-lock.json)
  4. try it: just serve {name}        (then curl 'localhost:8000/info')
  5. {CAPACITY_STEP.format(name=name)}
  6. its conformance tests: just test-target {name}
  7. everything: just test"""
    return f"""created {rel}/ (a copy of python/{like}/)
next steps:
  1. edit {rel}/app.py: your framework's routing, `def` handler, lifespan and error
     handlers; the endpoints' work stays labkit's (see README, "Adding a framework")
  2. set `framework` in {rel}/{MANIFEST} to its distribution name (also the name the
     app passes to /info), `concurrency` (one line: how it runs requests) and the
     profiles' commands; then `just docs` writes it into README's targets table
  3. add the dependency: .tools/uv/bin/uv add PACKAGE   (then commit pyproject.toml + uv.lock)
  4. try it: just serve {name}        (then curl 'localhost:8000/info')
  5. {CAPACITY_STEP.format(name=name)}
  6. its conformance tests: just test-target {name}
  7. everything: just test"""


def run(args: argparse.Namespace) -> int:
    """Create python/NAME/, node/NAME/ or jvm/NAME/ (the app, target.toml, server config) as a
    copy of the --like target, and print the next steps."""
    try:
        folder = new_target(args.name, args.like)
    except ScaffoldError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    language = next(t.language for t in discover() if t.name == args.like)
    print(next_steps(args.name, args.like, folder, language))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "new-target",
        run,
        "create python/NAME/, node/NAME/ or jvm/NAME/ from a target built on a kit",
    )
    p.add_argument("name", help="the new target's name (its folder)")
    p.add_argument("--like", default="starlette", help="the target to start from")
