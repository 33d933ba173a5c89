"""The gateway's upstream sender (admiss/serve/transport.py) against real servers on
127.0.0.1 that send what each test scripts, byte for byte, and log every connection."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from typing import Awaitable, Callable

import pytest

from admiss.config import ProviderConfig
from admiss.providers import CannotConnect, HttpxSender, Reply, ReplyTooLong, SendFailed, route_for
from admiss.serve.transport import PooledSender

BODY = b'{"model": "m"}'
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-test"}


def ok(body: bytes = b'{"ok": true}', *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"content-length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class Upstream:
    """A server whose ``answer(index, request)`` gives the bytes to send back for each request
    (None: close the connection without a reply); it logs every request per connection."""

    def __init__(self, answer: Callable[[int, bytes], Awaitable[bytes | None] | bytes | None],
                 close_after_reply: bool = False):
        self.answer = answer
        self.close_after_reply = close_after_reply
        self.connections: list[list[bytes]] = []
        self.netloc = ""  # host:port, once started
        self._server: asyncio.AbstractServer | None = None

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl_context)
        self.netloc = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return f"{'https' if ssl_context else 'http'}://{self.netloc}/v1/chat/completions"

    @property
    def requests(self) -> list[bytes]:
        return [request for connection in self.connections for request in connection]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        log: list[bytes] = []
        self.connections.append(log)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                request = head + await reader.readexactly(length)
                log.append(request)
                reply = self.answer(len(self.requests) - 1, request)
                if asyncio.iscoroutine(reply):
                    reply = await reply
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if self.close_after_reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        writer.close()

    async def stop(self) -> None:
        self._server.close()


def run(answer, calls: Callable[[PooledSender, str], Awaitable], **sender_options):
    """Start an upstream with ``answer``, run ``calls(sender, url)``; (its result, the upstream)."""

    async def go():
        upstream = Upstream(answer, sender_options.pop("close_after_reply", False))
        url = await upstream.start(sender_options.pop("server_ssl", None))
        sender = PooledSender(ProviderConfig("local", url, timeout_s=5), **sender_options)
        try:
            return await calls(sender, url), upstream
        finally:
            await sender.aclose()
            await upstream.stop()

    return asyncio.run(go())


async def three_calls(sender: PooledSender, url: str) -> list[Reply]:
    return [await sender.post(url, BODY, HEADERS, 10_000) for _ in range(3)]


def test_calls_share_one_kept_connection_and_send_a_well_formed_request():
    replies, upstream = run(lambda i, r: ok(b'{"n": %d}' % i, "Retry-After: 3"), three_calls)
    assert [(r.status_code, r.body, r.headers["retry-after"]) for r in replies] == [
        (200, b'{"n": %d}' % i, "3") for i in range(3)]
    assert len(upstream.connections) == 1
    head, _, body = upstream.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert {b"host: " + upstream.netloc.encode(), b"accept-encoding: identity", b"content-type: application/json",
            b"authorization: Bearer sk-test", b"content-length: %d" % len(BODY)} == set(lines[1:])
    assert body == BODY


def test_a_chunked_reply_is_read_whole():
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n: 1\r\n1\r\n}\r\n0\r\n\r\n"
    replies, upstream = run(lambda i, r: chunked, three_calls)
    assert [r.body for r in replies] == [b'{"a": 1}'] * 3
    assert len(upstream.connections) == 1


def test_a_reply_that_ends_with_its_connection_is_read_whole_and_the_next_call_connects_again():
    reply = b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 5000  # no length: the body ends where the connection does
    replies, upstream = run(lambda i, r: reply, three_calls, close_after_reply=True)
    assert [r.body for r in replies] == [b"x" * 5000] * 3
    assert [len(c) for c in upstream.connections] == [1, 1, 1]


def test_an_interim_reply_is_passed_over_for_the_real_one():
    interim = b"HTTP/1.1 100 Continue\r\nx-interim: 1\r\n\r\n"
    replies, upstream = run(lambda i, r: interim + ok(), three_calls)
    assert [(r.status_code, r.body, "x-interim" in r.headers) for r in replies] == [(200, b'{"ok": true}', False)] * 3
    assert len(upstream.connections) == 1


def test_a_second_reply_to_one_request_leaves_the_first_as_it_was_and_its_connection_unused():
    replies, upstream = run(lambda i, r: ok(b'{"n": %d}' % i) + ok(b"{}", "x-extra: 1"), three_calls)
    assert [(r.body, "x-extra" in r.headers) for r in replies] == [(b'{"n": %d}' % i, False) for i in range(3)]
    assert [len(c) for c in upstream.connections] == [1, 1, 1]


def test_a_reply_that_says_connection_close_is_not_kept():
    replies, upstream = run(lambda i, r: ok(b"{}", "connection: close"), three_calls)
    assert [r.body for r in replies] == [b"{}"] * 3
    assert [len(c) for c in upstream.connections] == [1, 1, 1]


def test_a_kept_connection_the_server_closed_unanswered_is_sent_again_once_on_a_new_one():
    # The second request reaches a connection the server is closing: no byte of a reply.
    replies, upstream = run(lambda i, r: None if i == 1 else ok(b'{"n": %d}' % i), three_calls)
    assert [r.body for r in replies] == [b'{"n": 0}', b'{"n": 2}', b'{"n": 3}']
    assert [len(c) for c in upstream.connections] == [2, 2]


def test_a_new_connection_closed_unanswered_fails_without_sending_again():
    async def calls(sender, url):
        with pytest.raises(SendFailed, match="closed the connection without replying"):
            await sender.post(url, BODY, HEADERS, 10_000)

    _, upstream = run(lambda i, r: None, calls)
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("reply, error, message", [
    (b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"cut", SendFailed, "closed before the reply was complete"),
    (b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 2\r\n\r\n{}", SendFailed, "compressed as gzip"),
    (b"SMTP ready\r\n\r\n", SendFailed, "malformed reply"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: 20000\r\n\r\n", ReplyTooLong, None),
    (b"HTTP/1.1 200 OK\r\n" + b"x-pad: %s\r\n" % (b"y" * 1000) * 70 + b"content-length: 2\r\n\r\n{}", SendFailed,
     "headers longer than 65536 bytes"),
])
def test_a_bad_reply_is_an_error_and_its_connection_is_not_kept(reply, error, message):
    async def calls(sender, url):
        with pytest.raises(error, match=message):
            await sender.post(url, BODY, HEADERS, 10_000)
        return await sender.post(url, BODY, HEADERS, 10_000)

    # The first reply is the bad one, then the server closes; the next call gets a good one.
    good, upstream = run(lambda i, r: reply if i == 0 else ok(), calls, close_after_reply=True)
    assert good.body == b'{"ok": true}'
    assert len(upstream.connections) == 2


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent():
    async def calls(sender, url):
        with pytest.raises(SendFailed, match="line break"):
            await sender.post(url, BODY, {"authorization": "Bearer x\r\nx-injected: 1"}, 10_000)

    _, upstream = run(lambda i, r: ok(), calls)
    assert upstream.connections == []


def test_each_call_sends_its_own_headers_though_their_lines_are_kept_encoded():
    keys = [f"Bearer sk-{n}" for n in (1, 2, 1)] + [f"Bearer sk-many-{n}" for n in range(40)] + ["Bearer sk-2"]

    async def calls(sender, url):
        for key in keys:
            await sender.post(url, BODY, {"content-type": "application/json", "authorization": key}, 10_000)
        # A line break is refused though the same name came before with a good value.
        with pytest.raises(SendFailed, match="line break"):
            await sender.post(url, BODY, {"content-type": "application/json", "authorization": "Bearer sk-1\r\nx: 1"},
                              10_000)

    _, upstream = run(lambda i, r: ok(), calls)
    sent = [next(line for line in request.split(b"\r\n") if line.startswith(b"authorization: "))
            for request in upstream.requests]
    assert sent == [f"authorization: {key}".encode() for key in keys]


def test_a_refused_connection_is_cannot_connect():
    async def go():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        sender = PooledSender(ProviderConfig("local", f"http://127.0.0.1:{port}", timeout_s=5))
        with pytest.raises(CannotConnect):
            await sender.post(f"http://127.0.0.1:{port}/v1/chat/completions", BODY, HEADERS, 10_000)

    asyncio.run(go())


def test_calls_beyond_the_connection_limit_wait_for_a_connection():
    async def slow(index, request):
        await asyncio.sleep(0.05)
        return ok()

    async def calls(sender, url):
        return await asyncio.gather(*(sender.post(url, BODY, HEADERS, 10_000) for _ in range(8)))

    replies, upstream = run(lambda i, r: slow(i, r), calls, max_connections=2)
    assert [r.status_code for r in replies] == [200] * 8
    assert len(upstream.connections) == 2
    assert sum(len(c) for c in upstream.connections) == 8


def test_a_cancelled_call_closes_its_connection_and_the_next_call_gets_a_new_one():
    async def answer(index, request):
        if index == 0:
            await asyncio.sleep(10)  # the call is cancelled meanwhile
        return ok()

    async def calls(sender, url):
        first = asyncio.ensure_future(sender.post(url, BODY, HEADERS, 10_000))
        await asyncio.sleep(0.2)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await sender.post(url, BODY, HEADERS, 10_000)

    async def go():
        upstream = Upstream(answer)
        url = await upstream.start()
        sender = PooledSender(ProviderConfig("local", url, timeout_s=5))
        try:
            reply = await calls(sender, url)
            return reply, upstream, sender._open
        finally:
            await sender.aclose()
            await upstream.stop()

    reply, upstream, still_open = asyncio.run(go())
    assert reply.status_code == 200
    assert len(upstream.connections) == 2
    assert still_open == 1  # the cancelled call's connection is counted gone


def test_https(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ssl.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    replies, upstream = run(lambda i, r: ok(), three_calls, server_ssl=server_ssl, ssl_context=trusting)
    assert [r.body for r in replies] == [b'{"ok": true}'] * 3
    assert len(upstream.connections) == 1

    async def untrusted(sender, url):
        with pytest.raises(CannotConnect, match="CERTIFICATE_VERIFY_FAILED"):
            await sender.post(url, BODY, HEADERS, 10_000)

    run(lambda i, r: ok(), untrusted, server_ssl=server_ssl)


@pytest.mark.parametrize("sender_kind", ["pooled", "httpx"])
def test_a_connection_idle_past_idle_timeout_s_is_not_reused(sender_kind):
    async def go():
        upstream = Upstream(lambda i, r: ok())
        url = await upstream.start()
        config = ProviderConfig("local", url.rsplit("/chat/completions", 1)[0], timeout_s=5, idle_timeout_s=0.3)
        sender = PooledSender(config, route_for(config, {})) if sender_kind == "pooled" else HttpxSender(
            config, route_for(config, {}))
        try:
            await sender.post(url, BODY, HEADERS, 10_000)
            await sender.post(url, BODY, HEADERS, 10_000)  # at once: the kept connection
            await asyncio.sleep(0.6)
            await sender.post(url, BODY, HEADERS, 10_000)  # idle too long: a new one
        finally:
            await sender.aclose()
            await upstream.stop()
        return upstream

    upstream = asyncio.run(go())
    assert [len(c) for c in upstream.connections] == [2, 1]
