"""uv.lock serves every interpreter pyproject.toml allows: a package locked with a binary
wheel for one CPython must have one for each (else `just setup` would try to build it from
source on the others, and fail without a compiler: granian, a Rust extension, did)."""

from __future__ import annotations

import re
import tomllib

import pytest

from lab import ROOT

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_every_binary_package_has_a_wheel_for_every_supported_python() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", project["requires-python"]).groups()
    tags = [f"-cp3{minor}-" for minor in range(int(low), int(high))]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    missing = []
    for package in lock["package"]:
        wheels = [w["url"] for w in package.get("wheels", [])]
        universal = any("-abi3-" in w or "-none-any" in w for w in wheels)
        if not universal and any("-cp3" in w for w in wheels):
            missing += [
                f"{package['name']} {tag.strip('-')}"
                for tag in tags
                if not any(tag in w for w in wheels)
            ]
    assert not missing, f"uv.lock lacks wheels: {missing}; run: uv lock --upgrade-package NAME"
