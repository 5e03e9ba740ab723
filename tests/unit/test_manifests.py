"""Rules for the targets' manifests that no running server shows."""

from __future__ import annotations

import re

import pytest
from harness.targets import TARGETS

from lab.targets import MANIFEST, Target

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# `"--timeout", "0"` (gunicorn: never restart a stuck worker) in a command array.
TIMEOUT_ZERO = re.compile(r'"--timeout"\s*,\s*"0"|"--timeout=0"')


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_no_timeout_zero_without_a_reason(target: Target) -> None:
    """gunicorn's --timeout 0 lets one stuck request hold a worker forever; a manifest that
    uses it says why in a comment on that line or the line before."""
    lines = (target.folder / MANIFEST).read_text().splitlines()
    for i, line in enumerate(lines):
        if TIMEOUT_ZERO.search(line.split("#", 1)[0]):
            reason = "#" in line or (i > 0 and lines[i - 1].strip().startswith("#"))
            assert reason, f"{target.name}/{MANIFEST}:{i + 1}: --timeout 0 without a reason"
