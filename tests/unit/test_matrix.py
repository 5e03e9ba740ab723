"""lab/matrix.py: durations, the named matrices in k6/matrices, how a matrix expands into
cells (profiles, repeats, parameter overrides) and how a cell survives a trip through JSON."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest

from lab import capacities
from lab.contract import load
from lab.matrix import (
    MATRIX_DIR,
    Cell,
    Matrix,
    MatrixError,
    expand,
    from_toml,
    load_matrix,
    names,
    not_run,
    parse_duration,
    same_capacity,
)
from lab.model import MIN_REQUESTS
from lab.targets import UnknownChoice, discover

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

TARGETS = discover()
BENCH = [e.name for e in load().bench_endpoints()]


def base_key(cell: Cell) -> tuple[Any, ...]:
    """A cell without its repetition number: what must not run twice in a row."""
    return (cell.target, cell.profile, cell.endpoint, cell.params, cell.vus, cell.rate)


def params_of(cells: list[Cell]) -> dict[str, dict[str, int]]:
    return {c.endpoint: dict(c.params) for c in cells}


# --- durations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10.0),
        ("500ms", 0.5),
        ("2m", 120.0),
        ("1m30s", 90.0),
        ("1.5s", 1.5),
        ("0s", 0.0),
        ("1m0s250ms", 60.25),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "10", "s", "10 s", " 10s", "10s ", "1h", "-5s", "10sec", "ten", "1m 30s", ".5s"]
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(MatrixError, match="duration must look like"):
        parse_duration(text)


# --- the named matrices ------------------------------------------------------------------


def test_names_are_the_files() -> None:
    assert names() == sorted(p.stem for p in MATRIX_DIR.glob("*.toml"))
    assert {"quick", "full"} <= set(names())


@pytest.mark.parametrize("name", names())
def test_every_matrix_loads_and_expands(name: str) -> None:
    matrix = load_matrix(name)
    assert matrix.name == name
    assert matrix.description
    cells = expand(matrix, seed=1)
    assert cells
    ids = [c.id for c in cells]
    assert len(set(ids)) == len(ids)
    for c in cells:
        assert c.duration_s > 0
        assert c.vus >= 1
        assert c.endpoint in BENCH


def test_unknown_matrix_lists_the_choices() -> None:
    with pytest.raises(UnknownChoice) as err:
        load_matrix("nope")
    message = str(err.value)
    assert "unknown matrix 'nope'" in message
    for name in names():
        assert name in message


def test_quick_is_every_default_profile_times_the_representative_endpoints() -> None:
    matrix = load_matrix("quick")
    cells = expand(matrix, seed=1)
    chosen = matrix.endpoints
    assert isinstance(chosen, list) and set(chosen) < set(BENCH)
    # the endpoints left out are measured by the io, db and pools matrices
    elsewhere = {e for m in ("io", "db", "pools") for e in load_matrix(m).endpoints}
    assert set(BENCH) - set(chosen) <= elsewhere
    # every kind of wait is in it: a sleep, a blocked loop, CPU, and the database's pool
    kinds = {load()[e].kind for e in chosen}
    assert {"none", "sleep", "cpu", "db"} <= kinds
    assert len({c.vus for c in cells}) == 1
    assert len({c.rate for c in cells}) == 1
    assert {c.repeat for c in cells} == {1}
    defaults = {t.name: t.default_profile for t in TARGETS}
    assert all(c.profile == defaults[c.target] for c in cells)
    # every endpoint of every target, but a waiting one whose capacity another one measures
    assert matrix.distinct_capacities
    left = {
        (t.name, e)
        for t in TARGETS
        for e in same_capacity(t.name, t.default_profile, chosen, matrix, load())
    }
    assert {(c.target, c.endpoint) for c in cells} == {
        (t.name, e) for t in TARGETS for e in chosen
    } - left
    assert all(load()[e].kind == "sleep" for _, e in left)
    assert {(c.target, c.endpoint) for c in cells} >= {
        (t.name, e) for t in TARGETS for e in ("hello", "sync", "cpu", "db")
    }
    # gin's /async and /blocking are unbounded like its /sync (CONTRACT.md's table): 11 cells
    # left out with 13 targets, 67 run instead of 78; a new target may add to them
    assert {("gin", "async"), ("gin", "blocking")} <= left
    assert len(not_run(matrix)) == len(left)


def test_distinct_capacities_leaves_out_a_wait_another_endpoint_measures() -> None:
    contract = load()
    quick = load_matrix("quick")
    waits = ["sync", "async", "blocking", "executor", "gather", "sequential"]
    # Flask's sync workers: one formula (W) for every plain wait; /gather and /sequential
    # wait n times (other parameters), so each is its own question
    assert same_capacity("flask", "gunicorn", waits, quick, contract) == {
        "async": "sync",
        "blocking": "sync",
        "executor": "sync",
    }
    # FastAPI: the thread pool (W·T), the loop (unbounded), one request per worker (W)
    assert same_capacity("fastapi", "uvicorn", ["sync", "async", "blocking"], quick, contract) == {}
    # another wait is another service time: /async at 50 ms is not /sync at 100 ms
    other = replace(quick, params={"ms": 100, "async": {"ms": 50}})
    assert same_capacity("gin", "release", waits[:3], other, contract) == {"blocking": "sync"}
    # a profile CONTRACT.md has no row for leaves nothing out; nor does a matrix without the key
    assert same_capacity("nobody", "none", waits, quick, contract) == {}
    full = expand(replace(quick, distinct_capacities=False))
    assert len(full) == len(expand(quick)) + len(not_run(quick))
    assert not_run(replace(quick, distinct_capacities=False)) == []
    assert "flask/gunicorn/async: as /sync (W)" in not_run(quick)
    with pytest.raises(MatrixError, match="distinct_capacities"):
        from_toml("m", {"distinct_capacities": "yes"})


def test_db_is_every_default_profile_times_the_database_endpoints() -> None:
    matrix = load_matrix("db")
    cells = expand(matrix, seed=1)
    db = sorted(e.name for e in load().bench_endpoints() if e.kind == "db")
    assert db == ["db", "db-blocking", "db-rows"]
    defaults = {t.name: t.default_profile for t in TARGETS}
    assert sorted((c.target, c.profile, c.endpoint) for c in cells) == sorted(
        (t.name, defaults[t.name], e) for t in TARGETS for e in db
    )
    assert {(c.vus, c.rate, c.duration, c.repeat) for c in cells} == {(50, None, "3s", 1)}
    params = params_of(cells)
    assert params["db"] == params["db-blocking"] == {"ms": 100}
    assert params["db-rows"] == load()["db-rows"].defaults()  # n and seed: the contract's


def test_full_is_every_profile_repeated_three_times() -> None:
    matrix = load_matrix("full")
    cells = expand(matrix, seed=1)
    assert matrix.repeat == 3
    profiles = sum(len(t.profiles) for t in TARGETS)
    assert len(cells) == profiles * len(BENCH) * len(matrix.vus) * len(matrix.rates) * 3
    assert {(c.target, c.profile) for c in cells} == {
        (t.name, p) for t in TARGETS for p in t.profiles
    }
    repeats: dict[tuple[Any, ...], list[int]] = {}
    for c in cells:
        repeats.setdefault(base_key(c), []).append(c.repeat)
    assert all(sorted(r) == [1, 2, 3] for r in repeats.values())


# --- repetitions -------------------------------------------------------------------------


def small(repeat: int = 3, **kw: Any) -> Matrix:
    """Eight base cells: two targets x two endpoints x two VU levels."""
    return Matrix(
        name="t",
        targets=["gin", "fastapi"],
        endpoints=["sync", "async"],
        vus=[1, 10],
        duration="1s",
        repeat=repeat,
        **kw,
    )


def test_repeat_one_is_not_shuffled() -> None:
    assert expand(small(repeat=1), seed=1) == expand(small(repeat=1), seed=2)


def test_repeats_cover_every_cell_once() -> None:
    base = expand(small(repeat=1))
    cells = expand(small(repeat=3), seed=7)
    assert len(cells) == 3 * len(base)
    pairs = Counter((base_key(c), c.repeat) for c in cells)
    assert set(pairs) == {(base_key(b), r) for b in base for r in (1, 2, 3)}
    assert set(pairs.values()) == {1}


def test_same_seed_same_order() -> None:
    assert expand(small(), seed=42) == expand(small(), seed=42)
    orders = {tuple(c.id for c in expand(small(), seed=s)) for s in range(5)}
    assert len(orders) > 1  # the seed does change the order


def test_repeats_are_interleaved() -> None:
    """A repetition is not a copy of the cell just run: the seeded order mixes them."""
    cells = expand(small(), seed=3)
    first_round = [base_key(c) for c in cells[: len(cells) // 3]]
    assert len(set(first_round)) > 1
    # every cell's repeats are spread out, not a block of three
    positions: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(cells):
        positions.setdefault(base_key(c), []).append(i)
    assert any(p[-1] - p[0] > 2 for p in positions.values())


def test_repeats_never_run_back_to_back() -> None:
    bad = {}
    for seed in range(20):
        cells = expand(small(), seed=seed)
        adjacent = [a.id for a, b in pairwise(cells) if base_key(a) == base_key(b)]
        if adjacent:
            bad[seed] = adjacent
    assert not bad, f"repetitions back to back (seed: cells): {bad}"


# --- parameters --------------------------------------------------------------------------


def test_contract_defaults_fill_every_parameter() -> None:
    got = params_of(expand(Matrix(name="t", targets=["gin"])))
    assert got["hello"] == {}
    assert got["sync"] == {"ms": 100}
    assert got["gather"] == {"ms": 100, "n": 10}
    assert got["cpu"] == {"n": 1_000_000}


def test_global_override_applies_only_where_the_endpoint_takes_it() -> None:
    got = params_of(expand(Matrix(name="t", targets=["gin"], params={"ms": 20})))
    assert got["hello"] == {}
    assert got["sync"] == {"ms": 20}
    assert got["upstream-seq"] == {"ms": 20, "n": 10}
    assert got["cpu"] == {"n": 1_000_000}  # takes n, not ms


def test_per_endpoint_table_wins_over_global() -> None:
    matrix = Matrix(
        name="t", targets=["gin"], params={"n": 5, "ms": 30, "gather": {"n": 7}, "cpu": {"n": 9}}
    )
    got = params_of(expand(matrix))
    assert got["gather"] == {"ms": 30, "n": 7}
    assert got["sequential"] == {"ms": 30, "n": 5}
    assert got["cpu"] == {"n": 9}
    assert got["cpu-pool"] == {"n": 5}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"ms": 10001}, "ms must be between 0 and 10000"),
        ({"ms": -1}, "ms must be between 0 and 10000"),
        ({"gather": {"n": 0}}, "gather: n must be between 1 and 100"),
        ({"n": 101}, "n must be between 1 and 100"),
        ({"cpu": {"n": 20_000_001}}, "cpu: n must be between 0 and 20000000"),
        ({"ms": 1.5}, "ms must be an integer"),
    ],
)
def test_overrides_are_bounds_checked(params: dict[str, Any], message: str) -> None:
    with pytest.raises(MatrixError, match=message):
        expand(Matrix(name="t", targets=["gin"], params=params))


@pytest.mark.parametrize("value", ["100", True])
def test_non_integer_override_is_a_matrix_error(value: Any) -> None:
    with pytest.raises(MatrixError, match="ms must be an integer"):
        expand(Matrix(name="t", targets=["gin"], endpoints=["sync"], params={"ms": value}))


def test_override_that_no_chosen_endpoint_takes_is_ignored() -> None:
    cells = expand(Matrix(name="t", targets=["gin"], endpoints=["hello"], params={"ms": 99999}))
    assert [c.params for c in cells] == [()]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"repeat": 0}, "repeat must be at least 1"),
        ({"vus": [10, 0]}, "vus must be at least 1"),
        ({"rates": [0]}, "rate must be at least 1"),
        ({"duration": "10"}, "duration must look like"),
    ],
)
def test_bad_load_settings(changes: dict[str, Any], message: str) -> None:
    matrix = Matrix(name="t", targets=["gin"], endpoints=["sync"])
    for k, v in changes.items():
        setattr(matrix, k, v)
    with pytest.raises(MatrixError, match=message):
        expand(matrix)


# --- unknown names -----------------------------------------------------------------------


def test_unknown_endpoint_lists_the_choices() -> None:
    with pytest.raises(UnknownChoice) as err:
        expand(Matrix(name="t", targets=["gin"], endpoints=["sync", "nope"]))
    message = str(err.value)
    assert "unknown endpoint 'nope'" in message
    for e in BENCH:
        assert e in message
    assert "health" not in message and "info" not in message  # not benchmark endpoints


def test_unknown_profile_lists_the_choices() -> None:
    with pytest.raises(UnknownChoice) as err:
        expand(Matrix(name="t", targets=["flask"], profiles=["nope"]))
    message = str(err.value)
    assert "unknown flask profile 'nope'" in message
    flask = next(t for t in TARGETS if t.name == "flask")
    for p in flask.profiles:
        assert p in message


def test_unknown_target_lists_the_choices() -> None:
    with pytest.raises(UnknownChoice) as err:
        expand(Matrix(name="t", targets=["nope"]))
    message = str(err.value)
    assert "unknown target 'nope'" in message
    for t in TARGETS:
        assert t.name in message


def test_alias_names_the_target() -> None:
    cells = expand(Matrix(name="t", targets=["go"], endpoints=["sync"]))
    assert [(c.target, c.profile) for c in cells] == [("gin", "release")]


# --- cells -------------------------------------------------------------------------------


def test_cell_json_round_trip() -> None:
    cells = expand(small(rates=[None, 25]), seed=5)
    assert any(c.rate for c in cells)
    for c in cells:
        back = Cell.from_json(json.loads(json.dumps(c.to_json())))
        assert back == c
        assert back.id == c.id
        assert hash(back) == hash(c)


def test_cell_id_names_its_load() -> None:
    closed = Cell("gin", "release", "gather", (("ms", 5), ("n", 3)), 10, None, "2s", 2)
    opened = Cell("gin", "release", "gather", (("ms", 5), ("n", 3)), 10, 40, "2s", 2)
    assert closed.id == "gin/release/gather?ms=5,n=3@vus=10#2"
    assert opened.id == "gin/release/gather?ms=5,n=3@rate=40,vus=10#2"
    assert closed.param("n") == 3
    assert closed.param("nope") is None
    assert closed.duration_s == 2.0


def test_cell_ids_are_unique_across_every_dimension() -> None:
    matrix = Matrix(name="t", profiles="all", vus=[1, 10], rates=[None, 5], duration="1s", repeat=2)
    cells = expand(matrix, seed=9)
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids))
    profiles = sum(len(t.profiles) for t in TARGETS)
    assert len(cells) == profiles * len(BENCH) * 2 * 2 * 2


def test_max_duration_is_read_and_checked() -> None:

    assert from_toml("m", {"max_duration": "6s"}).max_duration == "6s"
    for bad in ("6", 6, "0s", "fast"):
        with pytest.raises(MatrixError, match="max_duration"):
            from_toml("m", {"max_duration": bad})
    assert from_toml("m", {"graceful_stop": "1s"}).graceful_stop == "1s"
    assert from_toml("m", {"graceful_stop": "0s"}).graceful_stop == "0s"  # none at all
    for bad in ("1", 1, "soon"):
        with pytest.raises(MatrixError, match="graceful_stop"):
            from_toml("m", {"graceful_stop": bad})


# Targets counted before they land (name -> language), at the overhead of a language not
# measured yet (OVERHEAD_UNMEASURED_S): none now, issue 22's JVM targets have landed (java's
# overhead is measured: lab.run.runner.OVERHEAD_S).
COMING: dict[str, str] = {}
# The time k6 waits for the requests in flight once a cell that is not lengthened ends: 0.23 s
# on average over the 45 such cells of the quick run 20261125-015021 (at most the matrix's
# graceful_stop, 1 s).
TAIL_S = 0.25
# The slowest FNV-1a step measured in Python: 131-181 ms for n = 1 M in the /cpu calibrations
# of quick runs 20261128-092110 and 20261128-100025.
PYTHON_STEP_S = 181e-9


def quick_worst_case() -> tuple[list[Cell], set[str], float]:
    """Quick's cells with every target (and those in COMING), its slow cells, and its worst
    case: the estimate (each cell's load and its language's measured overhead) plus every
    slow cell lengthened to the matrix's cap, k6's grace after it, and the others' tails."""
    from lab.run.runner import LOADGEN_COST_S, estimate_s

    quick = load_matrix("quick")
    cells = expand(quick)
    languages = {t.name: t.language for t in discover()}
    for name in set(COMING) - set(languages):  # six cells, like any target's
        languages[name] = COMING[name]
        cells += [replace(c, target=name, profile="default") for c in cells if c.target == "gin"]
    # a lengthened cell runs to the cap, then k6 gives the requests in flight the matrix's
    # grace (measured_s: 7 s planned, 8.0 s measured)
    duration, cap = parse_duration(quick.duration), parse_duration(quick.max_duration)
    extra = cap - duration + parse_duration(quick.graceful_stop)
    python = {t.name for t in discover() if t.language == "python"}
    # Slow: Python's CPU cells where fewer than MIN_REQUESTS of n FNV-1a steps fit in the
    # duration (none at quick's n), and every waiting cell the server serves with one slot
    # per worker (~10 rps: CONTRACT.md's capacity table says W, and WORKERS=1 when pinned):
    # 10 with 13 targets; jdkhttp's /blocking (C: one carrier) is lengthened too
    table = capacities.table()
    slow = {
        c.id
        for c in cells
        if c.target in python
        and c.endpoint in ("cpu", "cpu-pool")
        and MIN_REQUESTS * PYTHON_STEP_S * (c.param("n") or 0) > duration
    }
    slow |= {
        c.id
        for c in cells
        if table.get((c.target, c.profile), {}).get(c.endpoint) == "W"
        and (load()[c.endpoint].service_ms(dict(c.params)) or 0) > 0
    }
    warm_up_cap = parse_duration(quick.warm_up_max)  # a JIT's warm-up: at most quick's cap
    worst = estimate_s(cells, languages, warm_up_cap)
    worst += extra * len(slow) + TAIL_S * (len(cells) - len(slow))
    # every other /db cell is queued on its pool (50 VUs on 4-10 connections), lengthened to
    # hold MIN_REQUESTS of its rounds (lab.model.pool_rounds_s): 40 holds of ms, d and the
    # database's CPU (at most 2 ms beside the 100 ms)
    for c in cells:
        if c.endpoint == "db" and c.id not in slow:
            hold_s = ((load()["db"].service_ms(dict(c.params)) or 0.0) + 2.0) / 1000
            worst += max(0.0, MIN_REQUESTS * hold_s - duration)
    # a server that closes its connections (Flask's gunicorn sync) costs k6's reference run
    # again at each VU count, reconnecting (lab.run.calibrate.loadgen_cost)
    worst += LOADGEN_COST_S * len({c.vus for c in cells})
    return cells, slow, worst


def test_quick_matrix_holds_every_target() -> None:
    cells, slow, worst = quick_worst_case()
    languages = {t.name for t in discover()}
    assert {c.target for c in expand(load_matrix("quick"))} == languages
    assert {c.target for c in cells} == {t.name for t in TARGETS} | set(COMING)  # 13 today
    # flask's one sync worker holds /sync's slot (W); 10 slow cells with 13 targets, a new
    # target may add to them
    assert {c.id for c in cells if (c.target, c.endpoint) == ("flask", "sync")} <= slow
    assert slow < {c.id for c in cells} and worst > 0


def test_quick_matrix_fits_its_budget_with_every_target() -> None:
    """Issue 12's budget: < 10 minutes for `just bench-all` whatever targets exist, at worst
    (quick_worst_case)."""
    cells, slow, worst = quick_worst_case()
    assert worst < 10 * 60, (len(cells), len(slow), round(worst))


def test_plan_starts_nothing_and_lists_every_cell(tmp_path: Any) -> None:
    import subprocess
    import sys

    from lab import ROOT

    done = subprocess.run(
        [sys.executable, "-m", "lab", "bench-all", "--plan", "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    cells = expand(load_matrix("quick"))
    assert lines[0].startswith(f"quick: {len(cells)} cells, about ")
    assert "(nothing started)" in lines[0]
    assert len([line for line in lines if "@vus=" in line]) == len(cells)
    skipped = not_run(load_matrix("quick"))
    assert f"not run: {len(skipped)} cells" in done.stdout
    assert all(f"  {line}" in lines for line in skipped)
    assert f"at most {parse_duration(load_matrix('quick').max_duration):g} s" in lines[-1]
    assert not (tmp_path / "out").exists()  # no run folder, no server


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """`lab bench-all --plan | head -1`: the pipe closes before lab writes; no traceback."""
    import subprocess
    import sys

    from lab import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "bench-all", "--plan"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.close()  # no reader left: lab's first write fails with EPIPE
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (0, "")


def test_a_cells_estimate_is_what_it_took_here_before_else_its_languages_figures() -> None:
    """A cell run before on this machine is estimated at what it took then; the others at
    their load, their language's overhead and their JIT's warm-up at the run's cap: a JVM's
    reach the cap mostly (a share of it), V8's end steady sooner (seconds, capped), Go has
    none. io's Spring cells took 50-56 s each (run 20261202-170943) where the old estimate,
    quick's 4-s warm-up built in, said 21 s."""
    from lab.record import CellResult
    from lab.run.runner import OVERHEAD_S, WARM_UP_S, WARM_UP_SHARE, cell_estimates, warm_up_s

    def cell(target: str, profile: str) -> Cell:
        return Cell(target, profile, "sync", (("ms", 100),), 100, None, "10s", 1)

    cells = [cell("spring", "mvc"), cell("express", "node"), cell("gin", "release")]
    languages = {"spring": "java", "express": "node", "gin": "go"}
    io = cell_estimates(cells, languages, 30.0)
    assert io == pytest.approx([
        10 + OVERHEAD_S["java"] + WARM_UP_SHARE["java"] * 30,
        10 + OVERHEAD_S["node"] + WARM_UP_S["node"],
        10 + OVERHEAD_S["go"],
    ])  # fmt: skip
    assert io[0] > 10 + 11.0 + 15  # more than the old figure and half the cap
    quick = cell_estimates(cells, languages, 4.0)
    assert quick[0] == pytest.approx(10 + 11.0)  # quick's own figure for Java, as measured
    assert warm_up_s("node", 1.0) == 1.0  # never beyond the cap
    assert warm_up_s("rust", 30.0) == max(WARM_UP_SHARE.values()) * 30  # not measured yet
    past = {"express/node/sync?ms=100@vus=100": 14.2}
    assert cells[1].key in past  # the key a row reads back from its id (CellResult.key)
    assert CellResult(cell=cells[1].id).key == cells[1].key
    assert cell_estimates(cells, languages, 30.0, past)[1] == 14.2
    assert cell_estimates(cells, languages, 30.0, past)[::2] == io[::2]


def test_the_eta_keeps_the_runs_pace_against_each_cells_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two quick Go cells first, then a JVM cell estimated at ten times theirs: the time left
    is that cell's estimate at the pace the run kept (twice as slow as estimated), not the
    mean of the cells done so far."""
    import io
    from types import SimpleNamespace

    from lab.run import progress

    clock = {"now": 1000.0}  # lab.run.progress's clock only: time itself is untouched
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: clock["now"]))
    bar = progress.Progress([5.0, 5.0, 50.0], out=io.StringIO())
    assert bar.eta() == 60.0  # nothing done: the estimates
    clock["now"] += 20.0  # the two Go cells took 20 s, estimated 10
    bar.advance("ok")
    bar.advance("ok")
    assert bar.eta() == pytest.approx(100.0)  # 50 s estimated, at twice the time
    assert progress.Progress([], out=io.StringIO()).eta() == 0.0
