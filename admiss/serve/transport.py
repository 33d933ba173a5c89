"""The gateway's upstream sender: keep-alive HTTP/1.1 connections on asyncio, replies read by
httptools (the parser uvicorn serves the gateway with).

admiss's providers send through httpx by default. In the gateway every request makes at
least one model call, and a general client's per-call work (request and response objects,
middleware, pool bookkeeping, timers) was the largest part of a request's CPU: httpx's
several times aiohttp's, and aiohttp's was a quarter of the whole
(docs/performance.md#the-gateway).
A chat call needs little of it: one POST of a JSON body, one reply read whole within a
size cap, a connection kept for the next call. So the gateway's provider clients send
through :class:`PooledSender`; everything above it (the deadline, retries, error reasons,
response parsing) stays the providers' own.

What it does not do: redirects (a provider's endpoint does not move; the reply is
returned as it is), proxies, client certificates, a ``ca_file``, a URL's user-info, HTTP/2,
compressed replies (it asks for none and refuses one it did not ask for). A provider that
needs any of those but the last goes through aiohttp instead (admiss/serve/aiosender.py),
or httpx for HTTP/2 and proxies that are not http:// (``Route.plain`` and
``Route.httpx_only`` in admiss/providers.py decide); TLS here uses the same trust store. Kept
connections idle longer than the provider's ``idle_timeout_s`` are closed, not reused.

Whether it still pays is measured against httpx in the gateway benchmark
(``python benchmarks/run.py --only gateway``, docs/performance.md#the-gateway).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import deque
from typing import Mapping
from urllib.parse import urlsplit

import httptools

from admiss.config import ProviderConfig
from admiss.providers import CannotConnect, Reply, ReplyTooLong, Route, SendFailed, tls_problem

Origin = tuple[str, str, int]  # scheme, host, port
# A reply's status line and headers are not part of max_bytes (its body); this bounds them.
MAX_HEAD_BYTES = 64 * 1024
# A content-length httptools let through is still a header the server chose: only ASCII digits count.
_LENGTH = re.compile(r"[0-9]{1,18}")
# How many sets of request headers a sender keeps encoded.
_HEADER_SETS = 16


class PooledSender:
    """Posts over at most ``max_connections`` connections per sender, kept open between calls."""

    described = "admiss's own pool"

    def __init__(self, config: ProviderConfig, route: Route | None = None, max_connections: int = 100,
                 ssl_context: ssl.SSLContext | None = None):
        self._connect_timeout = config.timeout_s
        self._idle_timeout = config.idle_timeout_s
        self._max_connections = max_connections
        self._route = route
        self._ssl = ssl_context
        self._idle: dict[Origin, list[_Connection]] = {}
        self._open = 0  # connections open or being opened
        self._waiting: deque[asyncio.Future] = deque()
        self._targets: dict[str, tuple[Origin, bytes]] = {}
        # The header lines of each set of headers sent, checked and encoded once: a
        # provider's client sends the same few (its key changes seldom), and checking them
        # every call cost 2.2 us of the 14 us a call spends in this module (0.6 us now).
        self._lines: dict[tuple[tuple[str, str], ...], bytes] = {}

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply:
        origin, head = self._target(url)
        request = head + self._header_lines(headers) + b"content-length: %d\r\n\r\n" % len(body) + body
        connection = self._idle_connection(origin)
        if connection is not None:
            try:
                return await self._exchange(connection, request, max_bytes)
            except _Stale:
                # The server closed the kept connection as the request went out, before any of
                # its reply: it was not answered, so it goes once more on a new connection.
                pass
        connection = await self._connect(origin)
        try:
            return await self._exchange(connection, request, max_bytes)
        except _Stale:
            raise SendFailed("the server closed the connection without replying") from None

    def _header_lines(self, headers: Mapping[str, str]) -> bytes:
        key = tuple(headers.items())
        lines = self._lines.get(key)
        if lines is None:
            lines = _header_lines(headers)
            if len(self._lines) >= _HEADER_SETS:
                self._lines.clear()  # a key that keeps changing: the cache starts over, bounded
            self._lines[key] = lines
        return lines

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _target(self, url: str) -> tuple[Origin, bytes]:
        """The origin of ``url`` and its request line and host header, worked out once per URL."""
        known = self._targets.get(url)
        if known is None:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise SendFailed(f"not an http(s) URL: {url}")
            if parts.username is not None:
                # httpx sends user-info as Basic auth; here it would only leak into a header.
                raise SendFailed("a URL with a user name or password goes through httpx, not this pool")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            # Asking for no compression: the reply is cut off at max_bytes as it comes.
            head = f"POST {path} HTTP/1.1\r\nhost: {parts.netloc}\r\naccept-encoding: identity\r\n".encode("ascii")
            known = self._targets[url] = ((parts.scheme, parts.hostname, port), head)
        return known

    async def _exchange(self, connection: _Connection, request: bytes, max_bytes: int) -> Reply:
        try:
            reply = await connection.exchange(request, max_bytes)
        except BaseException:
            # Cancelled, or failed part way: what the connection holds is unknown.
            connection.close()
            self._release(connection)
            raise
        self._release(connection)
        return reply

    def _idle_connection(self, origin: Origin) -> _Connection | None:
        connections = self._idle.get(origin)
        while connections:
            connection = connections.pop()  # the most recently used: the least likely closed
            if connection.usable() and time.monotonic() - connection.released_at < self._idle_timeout:
                return connection
            connection.close()
            self._forget()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        """A connection to ``origin``: a new one, within the limit, or one another call released
        while this one waited for room."""
        while self._open >= self._max_connections and not self._close_an_idle_connection():
            await self._room()
            released = self._idle_connection(origin)
            if released is not None:
                return released
        scheme, host, port = origin
        tls = self._context() if scheme == "https" else None  # before counting: it may fail
        self._open += 1
        opening = asyncio.get_running_loop().create_connection(lambda: _Connection(origin), host, port, ssl=tls)
        try:
            # wait_for rather than asyncio.timeout (3.11+ only); its extra task is paid only
            # when a connection is opened.
            _, connection = await asyncio.wait_for(opening, self._connect_timeout)
        except asyncio.TimeoutError:
            self._forget()
            raise CannotConnect("connection timed out") from None
        except OSError as exc:  # ssl.SSLError among them
            self._forget()
            told = tls_problem(exc, self._route) if self._route is not None else None
            raise CannotConnect(told or str(exc) or type(exc).__name__) from None
        except BaseException:
            self._forget()
            raise
        return connection

    async def _room(self) -> None:
        """Wait until a connection is released or closed."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._wake()  # woken, then cancelled: the turn passes to the next caller
            else:
                self._waiting.remove(waiter)
            raise

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = self._route.ssl() if self._route is not None else ssl.create_default_context()
        return self._ssl

    def _release(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next call, or count it gone; wake a caller waiting for one."""
        if connection.usable():
            connection.released_at = time.monotonic()
            self._idle.setdefault(connection.origin, []).append(connection)
        else:
            self._forget()
        self._wake()

    def _close_an_idle_connection(self) -> bool:
        for connections in self._idle.values():
            if connections:
                connections.pop(0).close()
                self._forget()
                return True
        return False

    def _forget(self) -> None:
        self._open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


def _header_lines(headers: Mapping[str, str]) -> bytes:
    """The headers as request lines; SendFailed for one that would break the request's framing."""
    lines = []
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n"):
            raise SendFailed(f"header {name!r} has a line break in it")
        lines.append(f"{name}: {value}\r\n")
    try:
        return "".join(lines).encode("latin-1")
    except UnicodeEncodeError:
        raise SendFailed("a header holds a character HTTP/1.1 headers cannot carry") from None


class _Stale(Exception):
    """The connection closed before any byte of the reply came."""


class _Stop(Exception):
    """Raised in a parser callback to stop reading; the connection holds the reason."""


class _Connection(asyncio.Protocol):
    """One connection to an origin, one exchange at a time."""

    def __init__(self, origin: Origin):
        self.origin = origin
        self.released_at = 0.0  # when the last exchange ended (monotonic)
        self._transport: asyncio.Transport | None = None
        self._closed = False
        self._reply: asyncio.Future | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._received = False
        self._head_bytes = 0
        self._headers: dict[str, str] = {}
        self._body = bytearray()
        self._max_bytes = 0
        self._until_close = False  # the reply's body ends where the connection does
        self._problem: Exception | None = None

    def usable(self) -> bool:
        return not self._closed and self._transport is not None and not self._transport.is_closing()

    def exchange(self, request: bytes, max_bytes: int) -> asyncio.Future:
        """Send ``request``; the future is settled with the whole reply."""
        self._reply = asyncio.get_running_loop().create_future()
        self._received, self._until_close, self._problem, self._head_bytes = False, False, None, 0
        self._headers, self._body, self._max_bytes = {}, bytearray(), max_bytes
        self._transport.write(request)
        return self._reply

    def close(self) -> None:
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    # asyncio's calls

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._reply is None or self._reply.done():
            self.close()  # bytes nobody asked for: the connection is out of step
            return
        self._received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            self._fail(self._problem or SendFailed("the reply could not be read"))
        except httptools.HttpParserError as exc:
            self._fail(SendFailed(f"malformed reply: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._reply is None or self._reply.done():
            return
        if self._until_close:
            self._finish(keep=False)
        elif not self._received:
            self._reply.set_exception(_Stale())
        else:
            self._reply.set_exception(SendFailed("the connection closed before the reply was complete"))

    # httptools' calls

    def on_message_begin(self) -> None:
        if self._reply.done():  # a second reply to one request: the connection is out of step
            self._stop(SendFailed("a reply nobody asked for"))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._stop(SendFailed(f"reply headers longer than {MAX_HEAD_BYTES} bytes"))
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        headers = self._headers
        if headers.get("content-encoding", "identity").lower() != "identity":
            self._stop(SendFailed(f"reply compressed as {headers['content-encoding']}, which was not asked for"))
        length = headers.get("content-length")
        if length is not None and _LENGTH.fullmatch(length) and int(length) > self._max_bytes:
            self._stop(ReplyTooLong())
        self._until_close = length is None and "chunked" not in headers.get("transfer-encoding", "").lower()

    def on_body(self, body: bytes) -> None:
        self._body += body
        if len(self._body) > self._max_bytes:
            self._stop(ReplyTooLong())

    def on_message_complete(self) -> None:
        if self._parser.get_status_code() < 200:
            # An interim reply (100 Continue, 103 Early Hints): the real one follows.
            self._headers, self._body, self._head_bytes = {}, bytearray(), 0
            return
        self._finish(keep=self._parser.should_keep_alive())

    def _finish(self, keep: bool) -> None:
        if not keep:
            self.close()
        self._reply.set_result(Reply(self._parser.get_status_code(), self._headers, bytes(self._body)))

    def _stop(self, problem: Exception) -> None:
        self._problem = problem
        raise _Stop

    def _fail(self, problem: Exception) -> None:
        self.close()
        if not self._reply.done():
            self._reply.set_exception(problem)
