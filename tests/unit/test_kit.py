"""The target kit's pure functions: the integer grammar, repeated parameters, the order of
checks, the total-wait cap read from the contract, request ids, the 404/405 decision and
the /info parts found from the process."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab import ROOT
from lab.contract import load
from lab.targets import load as load_target
from lab.tools import scaffold
from labkit import asgi, errors, info, params, upstream, wsgi
from labkit.params import BadParam

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

CONTRACT = load()
GRAMMAR = "ms must be an integer without sign or leading zeros"


def refused(endpoint: str, query: list[tuple[str, str]]) -> dict[str, str]:
    with pytest.raises(BadParam) as caught:
        params.parse(CONTRACT[endpoint], query)
    assert caught.value.status == 400
    return caught.value.body()


@pytest.mark.parametrize(
    "raw", ["", "1.0", "1_0", "+5", " 5", "5 ", "007", "00", "-1", "-0", "abc", "1e3", "٣", "0x1",
            "1234567890", "5\n", "１"],
)  # fmt: skip
def test_outside_the_grammar(raw: str) -> None:
    assert refused("sync", [("ms", raw)]) == {"error": GRAMMAR, "param": "ms"}


@pytest.mark.parametrize(("raw", "value"), [("0", 0), ("7", 7), ("10000", 10000)])
def test_in_the_grammar(raw: str, value: int) -> None:
    assert params.parse(CONTRACT["sync"], [("ms", raw)]) == {"ms": value}


def test_bounds_come_from_the_contract() -> None:
    assert refused("sync", [("ms", "10001")]) == {
        "error": "ms must be between 0 and 10000",
        "param": "ms",
    }
    assert refused("gather", [("n", "0")])["error"] == "n must be between 1 and 100"
    assert refused("cpu", [("n", "999999999")])["param"] == "n"


@pytest.mark.parametrize("values", [("1", "2"), ("1", "1"), ("abc", "1")])
def test_a_repeated_parameter(values: tuple[str, str]) -> None:
    query = [("ms", v) for v in values]
    assert refused("sync", query) == {"error": "ms must be given once", "param": "ms"}


def test_order_ms_before_n_and_repeat_before_grammar() -> None:
    assert refused("gather", [("n", "0"), ("ms", "x")])["param"] == "ms"
    assert refused("gather", [("ms", "1"), ("n", "x"), ("n", "1")])["error"] == (
        "n must be given once"
    )


def test_defaults_and_unknown_parameters() -> None:
    query = [("other", "x"), ("other", "y")]
    assert params.parse(CONTRACT["gather"], query) == CONTRACT["gather"].defaults()


@pytest.mark.parametrize("endpoint", ["sequential", "upstream-seq"])
def test_total_wait_cap(endpoint: str) -> None:
    cap = CONTRACT[endpoint].max_service_ms
    assert cap == 10000  # from the contract's x-lab
    assert params.parse(CONTRACT[endpoint], [("ms", "100"), ("n", "100")]) == {"ms": 100, "n": 100}
    body = refused(endpoint, [("ms", "101"), ("n", "100")])
    assert body == {"error": "n * ms must be at most 10000", "param": "n"}


def test_the_cap_is_read_not_written_down() -> None:
    smaller = dataclasses.replace(CONTRACT["sequential"], max_service_ms=50)
    with pytest.raises(BadParam, match="at most 50"):
        params.parse(smaller, [("ms", "26"), ("n", "2")])
    assert CONTRACT["gather"].max_service_ms is None  # n waits at once: no cap
    assert params.parse(CONTRACT["gather"], [("ms", "10000"), ("n", "100")])["n"] == 100


@pytest.mark.parametrize(
    ("value", "forwarded"),
    [("abc-123", "abc-123"), ("a" * 64, "a" * 64), ("a" * 65, None), ("", None),
     ("a b", None), ("é", None), (None, None)],
)  # fmt: skip
def test_request_id(value: str | None, forwarded: str | None) -> None:
    assert upstream.request_id(value) == forwarded


def test_refusal() -> None:
    assert errors.refusal("GET", "/sync") is None
    for method in ("HEAD", "OPTIONS", "POST", "DELETE"):
        assert errors.refusal(method, "/sync") == (
            {"error": "method not allowed", "method": method},
            405,
            {"Allow": "GET"},
        )
    for method in ("GET", "POST"):
        assert errors.refusal(method, "/nope") == ({"error": "not found", "path": "/nope"}, 404, {})


def test_refusal_answer_is_what_both_middlewares_send() -> None:
    assert errors.refusal_answer("GET", "/sync") is None
    status, headers, content = errors.refusal_answer("OPTIONS", "/sync")  # type: ignore[misc]
    assert status == "405 Method Not Allowed"
    assert json.loads(content) == {"error": "method not allowed", "method": "OPTIONS"}
    assert headers == [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(content))),
        ("Allow", "GET"),
    ]
    assert errors.refusal_answer("GET", "/sync/")[0] == "404 Not Found"  # type: ignore[index]


def wsgi_call(app: Any, method: str, path: str) -> tuple[str, dict[str, str], bytes]:
    seen: list[Any] = []
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path.encode().decode("latin-1")}
    body = b"".join(app(environ, lambda status, headers: seen.extend([status, headers])))
    return seen[0], dict(seen[1]), body


def asgi_call(app: Any, method: str, path: str) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app({"type": "http", "method": method, "path": path}, receive, send))
    return sent


def test_get_only_under_wsgi_and_asgi() -> None:
    """Both middlewares answer 404/405 the same way before the app, and pass the rest on."""

    def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [b"app"]

    async def asgi_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    w, a = wsgi.GetOnly(wsgi_app), asgi.GetOnly(asgi_app)
    assert wsgi_call(w, "GET", "/hello") == ("200 OK", {}, b"app")
    assert asgi_call(a, "GET", "/hello")[0]["status"] == 200
    status, headers, body = wsgi_call(w, "POST", "/hello")
    assert (status, headers["Allow"], json.loads(body)["method"]) == (
        "405 Method Not Allowed",
        "GET",
        "POST",
    )
    start, sent = asgi_call(a, "POST", "/hello")
    assert start["status"] == 405 and (b"allow", b"GET") in start["headers"]
    assert json.loads(sent["body"]) == json.loads(body)
    status, headers, body = wsgi_call(w, "HEAD", "/héllo")  # WSGI's latin-1 path, decoded
    assert status == "404 Not Found" and body == b""  # HEAD: the headers only
    assert int(headers["Content-Length"]) == len(json.dumps(errors.not_found("/héllo")))
    assert asgi_call(a, "HEAD", "/héllo")[1]["body"] == b""


def test_lifespan_enters_the_resources_for_an_app_without_one() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def resources() -> AsyncIterator[None]:
        events.append("open")
        yield
        events.append("close")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise ValueError("no lifespan here")  # Django's ASGIHandler refuses it so

    async def run(wrapped: Any) -> list[str]:
        incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
        sent: list[str] = []

        async def receive() -> Any:
            return next(incoming)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        await wrapped({"type": "lifespan"}, receive, send)
        return sent

    lifespan = asgi.Lifespan(app, resources)
    assert asyncio.run(run(lifespan)) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert events == ["open", "close"]

    @asynccontextmanager
    async def broken() -> AsyncIterator[None]:
        raise RuntimeError("no pool")
        yield

    assert asyncio.run(run(asgi.Lifespan(app, broken))) == ["lifespan.startup.failed"]


def test_an_async_view_without_the_workers_session_gets_its_own() -> None:
    """Under WSGI an async view runs on an event loop of its own: a session for the request."""

    async def run() -> tuple[bool, bool]:
        theirs = upstream.open_session()
        async with upstream.session_for(SimpleNamespace(session=theirs)) as session:
            same = session is theirs
        async with upstream.session_for(SimpleNamespace()) as session:
            own = session is not theirs
        closed = session.closed
        await theirs.close()
        return same and own, closed

    assert asyncio.run(run()) == (True, True)


def test_graceful_timeout_from_the_command_line() -> None:
    assert info.graceful_timeout_s("uvicorn", ["app:app", "--timeout-graceful-shutdown", "3"]) == 3
    assert info.graceful_timeout_s("uvicorn", ["app:app"]) is None  # waits for every request
    assert info.graceful_timeout_s("gunicorn", ["--graceful-timeout=2", "app:app"]) == 2
    assert info.graceful_timeout_s("gunicorn", []) == 30  # gunicorn's own default
    assert info.graceful_timeout_s("hypercorn", []) == 3


def test_an_unknown_server_is_not_named_werkzeug(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in info.SERVERS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert info.server() == ("unknown", "")


# --- the scaffold (lab new-target) -------------------------------------------------------------


def test_scaffold_copies_a_kit_target(tmp_path: Path) -> None:
    folder = scaffold.new_target("mine", "starlette", root=tmp_path)
    assert (folder / "app.py").read_text() == (ROOT / "python/starlette/app.py").read_text()
    target = load_target(folder / "target.toml")
    assert target.name == "mine" and target.default_profile == "uvicorn"
    steps = scaffold.next_steps("mine", "starlette", folder)
    assert "just test-target mine" in steps
    assert "CONTRACT.md's capacity tables" in steps and "`mine / PROFILE |" in steps


def test_scaffold_copies_a_node_target(tmp_path: Path) -> None:
    folder = scaffold.new_target("mine", "express", root=tmp_path)
    assert (folder / "app.js").read_text() == (ROOT / "node/express/app.js").read_text()
    target = load_target(folder / "target.toml")
    assert target.name == "mine" and target.language == "node" and "cluster" in target.profiles
    steps = scaffold.next_steps("mine", "express", folder, "node")
    assert "app.js" in steps and "npm install" in steps and "just test-target mine" in steps
    assert "CONTRACT.md's capacity tables" in steps and "README's pools table" in steps


def test_scaffold_copies_a_java_target(tmp_path: Path) -> None:
    parent = tmp_path / "pom.xml"
    parent.write_text(
        "<modules>\n    <module>kit</module>\n    <module>jdkhttp</module>\n</modules>\n"
    )
    folder = scaffold.new_target("mine", "jdkhttp", root=tmp_path)
    main = (folder / "src/main/java/lab/mine/Main.java").read_text()
    assert main.startswith("package lab.mine;") and '"mine"' in main and "jdkhttp" not in main
    pom = (folder / "pom.xml").read_text()
    assert "<artifactId>mine</artifactId>" in pom and ".build/mine.jar" in pom
    assert "<mainClass>lab.mine.Main</mainClass>" in pom
    assert not (folder / "src/test").exists()  # jdkhttp's own test code: the suite's liar
    target = load_target(folder / "target.toml")
    assert target.name == "mine" and target.language == "java" and "virtual" in target.profiles
    assert all(".build/mine.jar" in " ".join(p.command) for p in target.profiles.values())
    assert "<module>jdkhttp</module>\n    <module>mine</module>" in parent.read_text()
    steps = scaffold.next_steps("mine", "jdkhttp", folder, "java")
    assert "Main.java" in steps and "just setup" in steps and "just test-target mine" in steps
    assert "CONTRACT.md's capacity tables" in steps and "README's pools table" in steps


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["starlette"], "'starlette' is already a target"),
        (["go"], "'go' is already a target or an alias"),
        (["mine", "--like", "nope"], "unknown --like 'nope'; choose from: "),
        (["Mine!"], "target name must match"),
    ],
)
def test_scaffold_refuses_with_one_line(argv: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab", "new-target", *argv],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr
