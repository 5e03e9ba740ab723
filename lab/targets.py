"""Finds targets from their folders: every `<language>/<name>/target.toml` is a target named
after its folder. Nothing here lists targets; adding a framework means adding a folder."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lab import ROOT

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
