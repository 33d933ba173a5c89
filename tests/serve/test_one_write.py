"""An answer's status line, headers and body leave in one write (admiss/serve/app.py's
_HeadWithBody): uvicorn writes the head and the body apart, a second system call and TCP
segment for every answer. What the held head must never do is stay held: a HEAD answer (no
body), pipelined requests, "100 Continue", an HTTP/1.0 request that closes, and streamed
answers are read here from a real `admiss serve` over a raw socket."""

from __future__ import annotations

import json
import socket

from gatewaykit import GOOD, KEY, prompt

from admiss.serve.app import _HeadWithBody

PATIENCE_S = 8


class _Written:
    """The writes that reach the transport under _HeadWithBody, and whether it was closed."""

    def __init__(self):
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_the_head_goes_out_with_the_first_body_bytes_and_nothing_else_is_held():
    written = _Written()
    held = _HeadWithBody(written)
    held.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # an interim answer is no head of the response
    held.write(b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n")
    assert written.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    held.write(b"HTTP/1.1 200 OK body")  # body bytes that look like a head are body
    held.write(b"")
    assert written.writes[1:] == [b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\nHTTP/1.1 200 OK body", b""]
    assert not held.is_closing()  # the rest of the transport is the transport's


def test_a_held_head_is_written_when_flushed_or_before_the_close():
    for finish in ("flush", "close"):
        written = _Written()
        held = _HeadWithBody(written)
        held.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        getattr(held, finish)()
        assert written.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]
        held.flush()
        assert written.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]  # once
        assert written.closed == (finish == "close")


def _chat(text: str, extra: str = "") -> tuple[bytes, bytes]:
    body = json.dumps({"model": "json", "messages": [{"role": "user", "content": text}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode()
    return head, body


def test_head_pipelined_and_continued_requests_are_all_answered(gateway):
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=PATIENCE_S) as sock:
        head, body = _chat(prompt({"cheap": GOOD})[1])
        # A HEAD answer has a head and no body: it must not wait for one.
        sock.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")
        [(answer, _)] = _read_answers_of(sock, [True])
        assert answer.startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n" + head + body)  # pipelined
        (health, status), (served, completion) = _read_answers_of(sock, [False, False])
        assert health.startswith(b"HTTP/1.1 200") and json.loads(status) == {"status": "ok"}
        assert served.startswith(b"HTTP/1.1 200") and json.loads(completion)["choices"][0]["message"]["content"] == GOOD
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=PATIENCE_S) as sock:
        head, body = _chat(prompt({"cheap": GOOD})[1], "Expect: 100-continue\r\n")
        sock.sendall(head)
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        [(served, completion)] = _read_answers_of(sock, [False])
        assert served.startswith(b"HTTP/1.1 200") and json.loads(completion)["choices"][0]["message"]["content"] == GOOD
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=PATIENCE_S) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")  # answered, then closed by the gateway
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b'{"status":"ok"}')


def _read_answers_of(sock: socket.socket, heads: list[bool]) -> list[tuple[bytes, bytes]]:
    """The answers to requests sent on ``sock``, in order; ``heads`` says which were HEAD
    requests (their answers carry a content-length but no body)."""
    data, answers = b"", []
    for is_head in heads:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"the connection closed after {len(answers)} answers"
            data += chunk
        head, data = data.split(b"\r\n\r\n", 1)
        length = 0 if is_head else next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
        while len(data) < length:
            chunk = sock.recv(65536)
            assert chunk, "the connection closed inside a body"
            data += chunk
        answers.append((head, data[:length]))
        data = data[length:]
    return answers


def test_a_streamed_answer_arrives_whole(gateway):
    client = gateway.client()
    chunks = list(client.chat.completions.create(model="json", stream=True,
                                                 messages=[{"role": "user", "content": prompt({"cheap": GOOD})[1]}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == GOOD
