"""Finds targets from their folders: every `<language>/<name>/target.toml` is a target named
after its folder. Nothing here lists targets; adding a framework means adding a folder.
`lab targets` prints what is found, with the contract's endpoints."""

from __future__ import annotations

import argparse
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lab import ROOT
from lab.contract import load as load_contract

MANIFEST = "target.toml"


class UnknownChoice(LookupError):
    """A name that is not one of the valid choices; the message lists them."""

    def __init__(self, what: str, name: str, choices: list[str]) -> None:
        super().__init__(f"unknown {what} {name!r}; choose from: {', '.join(choices)}")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    name: str
    folder: Path
    language: str
    framework: str
    default_profile: str
    profiles: dict[str, Profile]
    aliases: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    concurrency: str = ""  # how it runs requests, one line (README's targets table)

    def profile(self, name: str | None = None) -> Profile:
        name = name or self.default_profile
        if name not in self.profiles:
            raise UnknownChoice(f"{self.name} profile", name, list(self.profiles))
        return self.profiles[name]


def load(manifest: Path) -> Target:
    data = tomllib.loads(manifest.read_text())
    profiles = {
        name: Profile(
            name=name,
            description=raw.get("description", ""),
            command=tuple(raw["command"]),
            env={k: str(v) for k, v in raw.get("env", {}).items()},
        )
        for name, raw in data["profiles"].items()
    }
    target = Target(
        name=data.get("name", manifest.parent.name),
        folder=manifest.parent,
        language=data["language"],
        framework=data["framework"],
        default_profile=data["default_profile"],
        profiles=profiles,
        aliases=tuple(data.get("aliases", ())),
        build=tuple(data.get("build", ())),
        concurrency=data.get("concurrency", ""),
    )
    if target.default_profile not in profiles:
        raise ValueError(f"{manifest}: default_profile {target.default_profile!r} is not a profile")
    return target


def discover(root: Path = ROOT) -> list[Target]:
    return [load(m) for m in sorted(root.glob(f"*/*/{MANIFEST}"))]


def find(name: str, targets: list[Target] | None = None) -> Target:
    """A target by folder name or alias (`go` for the Go target)."""
    targets = discover() if targets is None else targets
    for t in targets:
        if name == t.name or name in t.aliases:
            return t
    raise UnknownChoice("target", name, [t.name for t in targets])


def cmd_targets(args: argparse.Namespace) -> int:
    """`lab targets`: every target with its profiles, then the contract's endpoints."""
    contract = load_contract()
    for t in discover():
        alias = f" (alias: {', '.join(t.aliases)})" if t.aliases else ""
        print(f"{t.name}{alias}  [{t.language}, {t.framework}]")
        for p in t.profiles.values():
            mark = "*" if p.name == t.default_profile else " "
            print(f"  {mark} {p.name:<10} {p.description}")
    print(f"\nendpoints (contract v{contract.version}):")
    for e in contract.endpoints:
        params = ", ".join(f"{p.name}={p.default} [{p.minimum}..{p.maximum}]" for p in e.params)
        print(f"  {e.path:<14} {params:<48} {e.summary}")
    print("\n* = default profile")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("targets", help="list targets, their profiles and the contract's endpoints")
    p.set_defaults(run=cmd_targets)
