"""The three HTTP faces hold, as real processes over raw HTTP on 127.0.0.1:
`memory-server --http`, `lro proxy --http` (over `lro context mcp`, an MCP
server of the same binary) and `lro context serve`, each behind lro-http's
guard: bearer tokens (401 with `WWW-Authenticate`), the Origin and Host check
(403), malformed JSON (400; a JSON-RPC -32700 on the MCP faces), JSON that is
not a JSON-RPC message on the MCP faces (400, -32600), a refusal to
listen beyond loopback without tokens (exit 2), 300 slow-header
connections that are closed after the header-read timeout while a good
request is still answered, a connection opening with the HTTP/2 preface
closed rather than held, and a session id refused to any principal but the
one that opened it (404, as an unknown session); under an open-file limit of
256, 300 reconnecting slow clients keep no good request waiting a second
(the oldest idle connection is shed); and memory-server's session caps: one
principal's flood of `initialize` calls keeps only its newest sessions and
never ends another principal's. Every test ends by checking the face still serves.
"""

from __future__ import annotations

import http.client
import json
import selectors
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from testkit.paths import LRO, MEMORY_SERVER
from testkit.procs import Background, environ_without
from testkit.waiting import PROMPT_S, wait_until

GOOD = "good-token-0123456789"
TOKENS = f"{GOOD}=alice,other-token-0123456789=bob"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faces", "version": "0"}},
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Face:
    name: str
    path: str
    mcp: bool

    def argv(self, addr: str, store: Path, *flags: str) -> list[str]:
        if self.name == "memory-server":
            return [str(MEMORY_SERVER), "--http", addr, "--corpus-size", "20", *flags]
        if self.name == "proxy":
            upstream = [str(LRO), "context", "mcp", "--store-root", str(store)]
            return [str(LRO), "proxy", "--http", addr, *flags, "--", *upstream]
        return [str(LRO), "context", "serve", "--http", addr, "--store-root", str(store), *flags]

    def good_body(self) -> dict:
        return INIT if self.mcp else {"pattern": "x", "path": "."}


FACES = [Face("memory-server", "/mcp", True), Face("proxy", "/mcp", True), Face("context", "/grep", False)]


@pytest.fixture(params=FACES, ids=lambda f: f.name)
def face(request, binaries) -> Face:
    return request.param


@pytest.fixture
def start(face: Face, tmp_path: Path):
    """Starts the face on 127.0.0.1:0 with FLAGS and the tokens in ENV;
    returns (process, port)."""
    started: list[Background] = []

    def run(*flags: str, tokens: str | None = TOKENS, prefix: tuple[str, ...] = ()) -> tuple[Background, int]:
        env = environ_without("LRO_BEARER_TOKENS", "ATLATL_", "RUST_LOG")
        env["ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR"] = str(tmp_path / "out")
        if tokens is not None:
            env["LRO_BEARER_TOKENS"] = tokens
        store = tmp_path / "store"
        store.mkdir(exist_ok=True)
        argv = [*prefix, *face.argv("127.0.0.1:0", store, *flags)]
        proc = Background(argv, env, tmp_path / f"{face.name}{len(started)}.err")
        started.append(proc)
        return proc, int(proc.wait_url().rsplit(":", 1)[1].split("/")[0])

    yield run
    for proc in started:
        proc.stop()


def exchange(port: int, face: Face, headers: dict[str, str], body: bytes) -> tuple[int, dict, str]:
    """(status, headers by lower-case name, text) of one POST to the face's path."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PROMPT_S)
    try:
        conn.request("POST", face.path, body=body, headers={**MCP_HEADERS, **headers})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def post(port: int, face: Face, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of one POST to the face's path."""
    data = body if body is not None else json.dumps(face.good_body()).encode()
    status, got, text = exchange(port, face, headers or {}, data)
    if status == 200 and face.mcp:
        assert '"serverInfo"' in text, text
        return 200, got, {}
    return status, got, json.loads(text)


def served(port: int, face: Face) -> None:
    status, _, body = post(port, face, {"Authorization": f"Bearer {GOOD}"})
    assert status == 200, (status, body)


def test_tokens_are_required(face, start):
    proc, port = start()
    status, headers, body = post(port, face)
    assert status == 401 and headers["www-authenticate"] == "Bearer", (status, headers)
    assert body, "a short JSON body"
    status, _, _ = post(port, face, {"Authorization": "Bearer good-token-012345678"})
    assert status == 401
    status, _, _ = post(port, face, {"Authorization": f"Basic {GOOD}"})
    assert status == 401
    served(port, face)
    assert GOOD not in proc.stderr() and "alice" not in proc.stderr()


def test_foreign_origin_and_host_are_refused(face, start):
    proc, port = start()
    auth = {"Authorization": f"Bearer {GOOD}"}
    status, _, body = post(port, face, {**auth, "Origin": "http://evil.example"})
    assert status == 403 and body, (status, body)
    status, _, _ = post(port, face, {**auth, "Host": "evil.example"})
    assert status == 403
    status, _, _ = post(port, face, {**auth, "Origin": f"http://localhost:{port}"})
    assert status == 200
    assert proc.alive()


OTHER = "other-token-0123456789"
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def open_session(port: int, face: Face, token: str) -> str:
    """Initializes as TOKEN's principal; the session id handed out."""
    status, headers, _ = post(port, face, {"Authorization": f"Bearer {token}"})
    assert status == 200
    session = headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _ = raw(port, face, token, session, note)
    assert status == 202, status
    return session


def raw(port: int, face: Face, token: str, session: str, message: dict) -> tuple[int, dict, str]:
    """(status, headers, text) of one POST in SESSION as TOKEN."""
    headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session}
    return exchange(port, face, headers, json.dumps(message).encode())


@pytest.mark.parametrize("face", FACES[:2], ids=lambda f: f.name, indirect=True)
def test_a_session_serves_only_the_principal_that_opened_it(face, start):
    _, port = start()
    session = open_session(port, face, GOOD)
    # Bob holds Alice's session id: the answer of an unknown session.
    status, _, text = raw(port, face, OTHER, session, PING)
    assert status == 404 and "Session not found" in text, (status, text)
    status, _, text = raw(port, face, OTHER, "no-such-session", PING)
    assert status == 404, (status, text)
    # Alice's session goes on.
    status, _, text = raw(port, face, GOOD, session, PING)
    assert status == 200 and '"result"' in text, (status, text)


def test_malformed_json_is_a_json_error(face, start):
    _, port = start()
    status, headers, body = post(port, face, {"Authorization": f"Bearer {GOOD}"}, b'{"jsonrpc": "2.0", "id": 1,')
    assert status == 400, (status, body)
    assert headers["content-type"].startswith("application/json")
    if face.mcp:
        assert body["error"]["code"] == -32700 and body["id"] is None and body["jsonrpc"] == "2.0", body
    else:
        assert body["success"] is False, body
    served(port, face)


# The MCP faces only: the context service's bodies are JSON of its own shape.
@pytest.mark.parametrize("face", FACES[:2], ids=lambda f: f.name, indirect=True)
@pytest.mark.parametrize(
    "body",
    ["[]", "42", '{"foo": 1}', '"text"', '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', '{"jsonrpc": "2.0", "id": null, "method": "ping"}'],
    ids=["empty-array", "number", "object", "string", "batch", "null-id"],
)
def test_json_that_is_not_json_rpc_is_an_invalid_request(face, start, body):
    """The MCP transport: a body the server cannot accept gets an HTTP error
    status (400) whose body MAY be a JSON-RPC error with no id; rmcp alone
    answered 415 in plain text."""
    _, port = start()
    status, headers, answer = post(port, face, {"Authorization": f"Bearer {GOOD}"}, body.encode())
    assert status == 400, (status, answer)
    assert headers["content-type"].startswith("application/json")
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None, answer
    assert answer["error"]["code"] == -32600 and "JSON-RPC message" in answer["error"]["message"], answer
    served(port, face)


def test_beyond_loopback_needs_tokens_or_the_flag(face, tmp_path, binaries):
    env = environ_without("LRO_BEARER_TOKENS", "ATLATL_")
    env["ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR"] = str(tmp_path / "out")
    (tmp_path / "store").mkdir()
    argv = face.argv("0.0.0.0:0", tmp_path / "store")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=PROMPT_S)
    assert done.returncode == 2, done.stderr
    assert "--allow-unauthenticated" in done.stderr, done.stderr
    opened = Background(face.argv("0.0.0.0:0", tmp_path / "store", "--allow-unauthenticated"), env, tmp_path / "open.err")
    try:
        opened.wait_url()
    finally:
        opened.stop()


def slow_sockets(port: int, n: int) -> list[socket.socket]:
    """`n` connections that each send part of a request head, then nothing."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=PROMPT_S)
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(s)
    return socks


def wait_closed(socks: list[socket.socket], within: float) -> None:
    """Every socket is closed by the server (EOF or reset) within `within` s."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    open_ = set(socks)
    deadline = time.monotonic() + within
    while open_ and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=deadline - time.monotonic()):
            try:
                data = key.fileobj.recv(4096)
            except ConnectionResetError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                open_.discard(key.fileobj)
    sel.close()
    assert not open_, f"{len(open_)} of {len(socks)} slow connections still open after {within}s"


def served_while_slow_ones_close(proc, port, face, socks, closing, within):
    """A good request is answered at once while the slow `socks` hang on,
    `closing` of them are closed within `within` seconds, and the face still
    serves after."""
    try:
        began = time.monotonic()
        served(port, face)
        assert time.monotonic() - began < 1.0, "answered while the slow ones are held"
        wait_closed(closing, within=within)
    finally:
        for s in socks:
            s.close()
    served(port, face)
    assert proc.alive()


def test_slow_headers_are_closed_and_good_requests_answered(face, start):
    proc, port = start("--header-read-timeout", "1")
    socks = slow_sockets(port, 300)
    served_while_slow_ones_close(proc, port, face, socks, closing=socks, within=8.0)


# The accept loop is lro-http's, the same for every face: one face shows it.
@pytest.mark.parametrize("face", FACES[:1], ids=lambda f: f.name, indirect=True)
def test_past_the_connection_cap_a_good_request_sheds_the_idle_longest(start, face):
    """Four connections at most, twelve slow ones, the header-read timeout at
    its 10 s default: the slow ones past the cap shed the oldest, and so does
    the good request, which is answered at once."""
    proc, port = start("--max-connections", "4")
    socks = slow_sockets(port, 12)
    # The eight oldest, and one more for the good request, are closed.
    served_while_slow_ones_close(proc, port, face, socks, closing=socks[:9], within=PROMPT_S)


@pytest.mark.parametrize("face", FACES[:1], ids=lambda f: f.name, indirect=True)
def test_an_http2_preface_holds_no_connection(start, face):
    """h2c is not served (lro_http::serve says why): a connection that opens
    with the HTTP/2 preface and then waits is closed, where an HTTP/2 server
    without an idle timeout would keep it, and its connection slot, for ever."""
    proc, port = start("--header-read-timeout", "1")
    sock = socket.create_connection(("127.0.0.1", port), timeout=PROMPT_S)
    try:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        wait_closed([sock], within=PROMPT_S)
    finally:
        sock.close()
    served(port, face)
    assert proc.alive()


def request(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, dict, dict]:
    """(status, headers by lower-case name, JSON body) of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PROMPT_S)
    try:
        conn.request(method, path, body=body or None, headers=headers)
        response = conn.getresponse()
        got = {k.lower(): v for k, v in response.getheaders()}
        return response.status, got, json.loads(response.read().decode())
    finally:
        conn.close()


def test_415_406_and_405_are_in_the_faces_own_shape(face, start):
    """What the service behind the guard refuses by status alone (rmcp's
    plain-text 415 and 406, axum's empty 405) is worded as every other
    refusal of the face: a JSON-RPC error on the MCP faces, ReMe's shape on
    the context service. The status and `Allow` stay."""
    _, port = start()
    auth = {"Authorization": f"Bearer {GOOD}"}
    body = json.dumps(face.good_body()).encode()
    cases = [("PUT", {**MCP_HEADERS, **auth}, 405)]
    if face.mcp:
        cases += [
            ("POST", {**MCP_HEADERS, **auth, "Content-Type": "text/plain"}, 415),
            ("POST", {**MCP_HEADERS, **auth, "Accept": "text/html"}, 406),
        ]
    for method, headers, status in cases:
        got, headers_back, answer = request(port, method, face.path, headers, body)
        assert got == status, (method, got, answer)
        assert headers_back["content-type"].startswith("application/json"), headers_back
        if face.mcp:
            assert answer["jsonrpc"] == "2.0" and answer["id"] is None, answer
            assert answer["error"]["code"] == -32600 and answer["error"]["message"], answer
        else:
            assert answer["success"] is False and answer["answer"], answer
        if status == 405:
            assert "POST" in headers_back.get("allow", ""), headers_back
    served(port, face)


def test_a_changed_bearer_file_is_read_again_and_a_revoked_token_is_refused(face, start, tmp_path):
    """A token taken out of the file is refused from the next request on, and
    the sessions it opened end, even for the same principal's new token."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{GOOD}=alice\n")
    _, port = start("--bearer-file", str(tokens), tokens=None)
    served(port, face)
    session = open_session(port, face, GOOD) if face.mcp else None
    # Alice's token is replaced, by a rename as editors and secret mounts do.
    fresh = "fresh-token-0123456789"
    (tmp_path / "tokens.new").write_text(f"{fresh}=alice\n")
    (tmp_path / "tokens.new").rename(tokens)
    status, _, _ = post(port, face, {"Authorization": f"Bearer {GOOD}"})
    assert status == 401, status
    status, _, body = post(port, face, {"Authorization": f"Bearer {fresh}"})
    assert status == 200, (status, body)
    if session is not None:
        # The session the revoked token opened is gone: alice's own new
        # token gets the unknown-session answer in it.
        status, _, text = raw(port, face, fresh, session, PING)
        assert status == 404, (status, text)
        fresh_session = open_session(port, face, fresh)
        status, _, text = raw(port, face, fresh, fresh_session, PING)
        assert status == 200 and '"result"' in text, (status, text)


class Reconnecting:
    """`n` slow clients that connect and send nothing, each connecting again
    as soon as the server closes it, in a thread until stopped."""

    def __init__(self, port: int, n: int):
        self.port, self.sel, self.stopped = port, selectors.DefaultSelector(), threading.Event()
        self.reconnects = 0
        for _ in range(n):
            self.connect()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def connect(self) -> None:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=PROMPT_S)
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ)

    def run(self) -> None:
        while not self.stopped.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
                    self.connect()
                    self.reconnects += 1

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


# The accept loop is lro-http's, the same for every face: one face shows it.
@pytest.mark.parametrize("face", FACES[:1], ids=lambda f: f.name, indirect=True)
def test_under_a_low_open_file_limit_slow_clients_keep_no_good_request_waiting(start, face):
    """300 slow clients against 256 descriptors, the header-read timeout at its
    10 s default: each new connection sheds the one idle longest, so a good
    request is answered within a second, every time."""
    proc, port = start(prefix=("prlimit", "--nofile=256:256", "--"))
    slow = Reconnecting(port, 300)
    try:
        for _ in range(5):
            began = time.monotonic()
            served(port, face)
            assert time.monotonic() - began < 1.0, "a good request waited behind slow clients"
        # Past the cap (half of 256) the slow ones were shed, not queued.
        wait_until(lambda: slow.reconnects >= 300 - 128, timeout=PROMPT_S, what="slow clients shed")
    finally:
        slow.stop()
    served(port, face)
    assert proc.alive()


THIRD, FOURTH = "third-token-0123456789", "fourth-token-0123456789"


@pytest.mark.parametrize("face", FACES[:1], ids=lambda f: f.name, indirect=True)
def test_a_flood_of_sessions_keeps_its_newest_and_never_ends_anothers(start, face):
    """--max-sessions 4: each principal holds at most 2. Bob's ten sessions,
    never deleted, leave his newest two; Alice's session still answers."""
    _, port = start("--max-sessions", "4", tokens=f"{TOKENS},{THIRD}=carol,{FOURTH}=dave")
    alice = open_session(port, face, GOOD)
    bobs = [open_session(port, face, OTHER) for _ in range(10)]
    answering = [s for s in bobs if raw(port, face, OTHER, s, PING)[0] == 200]
    assert answering == bobs[-2:], "Bob keeps his newest two"
    status, _, text = raw(port, face, OTHER, bobs[0], PING)
    assert status == 404 and "Session not found" in text, (status, text)
    status, _, text = raw(port, face, GOOD, alice, PING)
    assert status == 200 and '"result"' in text, (status, text)
    # Carol takes the last place. At the total, Dave, with no session of his
    # own to close, is refused with a JSON-RPC error; Carol closes her own.
    open_session(port, face, THIRD)
    status, headers, text = exchange(port, face, {"Authorization": f"Bearer {FOURTH}"}, json.dumps(INIT).encode())
    assert status == 503 and "retry-after" in headers, (status, text)
    error = json.loads(text)["error"]
    assert error["code"] == -32000 and "too many sessions" in error["message"], error
    open_session(port, face, THIRD)
    for token, session in [(GOOD, alice), *[(OTHER, s) for s in bobs[-2:]]]:
        status, _, text = raw(port, face, token, session, PING)
        assert status == 200, (status, text)
