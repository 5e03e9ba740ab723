"""probe.LeanConnection reads every way an answer can end as http.client's Connection does:
a length, chunks (with a trailer), the connection's close, HTTP/1.0, no body; and fails on
what is not an answer or ends early."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from lab.proc import probe

pytestmark = pytest.mark.unit

JSON = b'{"endpoint":"hello"}'
ANSWERS = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n"
    + JSON,
    "chunked": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n8\r\n" + JSON[:8] + b"\r\nc\r\n" + JSON[8:] + b"\r\n"
    b"0\r\nX-Trailer: yes\r\n\r\n",
    "close": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    + JSON,
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n"
    + JSON,
    "empty": b"HTTP/1.1 204 No Content\r\n\r\n",
    "garbage": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "short": b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" + JSON,
}
CLOSES = ("close", "http10", "garbage", "short")  # the server closes after these


@pytest.fixture
def server() -> Iterator[tuple[str, list[bytes]]]:
    """A server on loopback answering each request with ANSWERS[its path's last part]; the
    requests it read, as sent."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    seen: list[bytes] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            pending = b""
            while True:
                while b"\r\n\r\n" not in pending:
                    data = conn.recv(4096)
                    if not data:
                        return
                    pending += data
                request, pending = pending.split(b"\r\n\r\n", 1)
                seen.append(request)
                case = request.split(b" ")[1].decode().rsplit("/", 1)[-1]
                conn.sendall(ANSWERS[case])
                if case in CLOSES:
                    return

    def accept() -> None:
        for _ in range(20):  # bounded: the test opens a handful
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    host, port = listener.getsockname()
    try:
        yield f"http://{host}:{port}", seen
    finally:
        listener.close()


def test_every_way_an_answer_ends(server: tuple[str, list[bytes]]) -> None:
    base, seen = server
    with probe.LeanConnection(base, timeout=5) as conn:
        for case in ("length", "chunked", "empty", "length"):  # one connection, kept alive
            reply = conn.get(f"/{case}")
            assert (reply.status, reply.closed) == (200 if case != "empty" else 204, False)
            assert reply.body == ({"endpoint": "hello"} if case != "empty" else "")
            assert reply.content_type == ("application/json" if case != "empty" else "")
        for case in ("close", "http10"):  # the server closes: opened again for the next
            reply = conn.get(f"/{case}")
            assert (reply.status, reply.body, reply.closed) == (200, {"endpoint": "hello"}, True)
        assert conn.get("/length").closed is False
    # the request http.client sends
    assert (
        seen[0] == f"GET /length HTTP/1.1\r\nHost: {base[7:]}\r\nAccept-Encoding: identity".encode()
    )


def test_what_is_not_an_answer_or_ends_early_fails(server: tuple[str, list[bytes]]) -> None:
    base, _ = server
    with probe.LeanConnection(base, timeout=5) as conn:
        with pytest.raises(ConnectionError, match="not an HTTP answer"):
            conn.get("/garbage")
        with pytest.raises(ConnectionResetError, match="mid-answer"):
            conn.get("/short")
        assert conn.get("/length").status == 200  # a new connection after each failure
