"""Slow clients cannot hold the gateway: a request's headers and body have deadlines, and
open connections a cap ([serve] header_timeout_s, body_timeout_s, max_connections). Raw
sockets against a real ``admiss serve`` process; every wait here is bounded."""

from __future__ import annotations

import json
import socket
import time

import pytest

from gatewaykit import GOOD, KEY, Gateway, prompt

HEADER_S, BODY_S, MAX_CONNECTIONS = 1, 1, 8
SETTINGS = f"header_timeout_s = {HEADER_S}\nbody_timeout_s = {BODY_S}\nmax_connections = {MAX_CONNECTIONS}\n"
# The longest a test waits for the gateway to act: well past each deadline, far short of "never".
PATIENCE_S = 8


@pytest.fixture(scope="module")
def bounded(tmp_path_factory, upstream):
    gateway = Gateway(tmp_path_factory.mktemp("slow"), upstream, serve_settings=SETTINGS)
    yield gateway
    assert gateway.stop() == 0, gateway.log.read_text()


def _connect(gateway: Gateway) -> socket.socket:
    return socket.create_connection(("127.0.0.1", gateway.port), timeout=PATIENCE_S)


def _until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the gateway sends until it closes the connection, and how long that took."""
    started, data = time.monotonic(), b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return data, time.monotonic() - started
        data += chunk


def _request(body: bytes, declared: int | None = None) -> bytes:
    length = len(body) if declared is None else declared
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode() + body


@pytest.mark.parametrize("sent", [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"])
def test_a_connection_whose_headers_do_not_arrive_is_closed(bounded, sent):
    with _connect(bounded) as sock:
        sock.sendall(sent)
        data, waited = _until_closed(sock)
    assert data == b"" and HEADER_S * 0.8 <= waited < PATIENCE_S


def test_a_kept_alive_connection_stalling_in_its_next_headers_is_closed(bounded):
    _, text = prompt({"cheap": GOOD})
    body = ('{"model": "json", "messages": [{"role": "user", "content": %s}]}' % json.dumps(text)).encode()
    with _connect(bounded) as sock:
        sock.sendall(_request(body))
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n")  # then nothing more
        data, waited = _until_closed(sock)
    assert b"HTTP/1.1" not in data and waited < PATIENCE_S


def test_a_body_that_does_not_arrive_gets_a_408(bounded):
    with _connect(bounded) as sock:
        sock.sendall(_request(b'{"model": "json", ', declared=200))
        data, waited = _until_closed(sock)
    assert data.startswith(b"HTTP/1.1 408"), data
    assert b'"code":"request_timeout"' in data and b"body_timeout_s" in data
    assert BODY_S * 0.8 <= waited < PATIENCE_S


def test_connections_past_the_cap_are_closed_at_once_and_the_gateway_serves_after(bounded):
    held = [_connect(bounded) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)  # let the gateway take them all
        with _connect(bounded) as extra:
            data, waited = _until_closed(extra)
        assert data == b"" and waited < HEADER_S * 0.8  # refused, not left to its header deadline
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    _, text = prompt({"cheap": GOOD})
    reply = bounded.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    assert reply.choices[0].message.content == GOOD
