"""The conformance suite's CPU claim: how early the first answer of a batch may come, where
the scheduler slices unfairly. The bound must pass what honest servers were measured doing
and fail a server that serves one request at a time (its first answer at 1/K)."""

from __future__ import annotations

import pytest
from harness import claims

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_short_jvm_requests_pass_honest_unfairness_and_catch_one_at_a_time() -> None:
    # Spring WebFlux /cpu: claims 4 on 2 CPUs, K = 5, S = 29 ms at the contract's n cap
    bound = claims.first_share_min(4, 4, 2, 5, 0.029, gil=False)
    assert bound < 0.30  # the lowest honest reading (a CI run, twice)
    assert bound > 1 / 5  # one at a time
    # sized to 0.1 s, the same claim keeps the fair bound (the caller's half-share)
    assert claims.first_share_min(4, 4, 2, 5, 0.1, gil=False) == 1.0


def test_the_other_cases_keep_their_bounds() -> None:
    assert claims.first_share_min(2, 2, 2, 3, 0.03, gil=False) == 1.0  # no more than the CPUs
    assert claims.first_share_min(4, 4, 1, 5, 0.1, gil=True) == pytest.approx(2 / 5)
    go = claims.first_share_min(None, 8, 2, 8, 0.025, gil=False)
    assert go == pytest.approx(0.75 * 2 / 8) and 1 / 8 < go < 0.3
