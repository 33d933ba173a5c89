"""Plain HTTP servers on 127.0.0.1 for hostile cases: one that counts what it is asked, one
that drips its reply a byte at a time. Each runs in a thread until stopped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.stopping = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._http.shutdown()
        self._http.server_close()

    def respond(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                server.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length", 0) or 0)
                self.rfile.read(length)
                try:
                    server.respond(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as the tests intend

            do_GET = do_POST = _any  # noqa: N815 - the stdlib's names

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


class CountingServer(_Server):
    """Answers every request with a small JSON Schema, and counts the requests."""

    def respond(self, handler: BaseHTTPRequestHandler) -> None:
        body = b'{"type": "string"}'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


class DripServer(_Server):
    """Sends a 200 chat-completion reply one byte every ``interval_s``: never idle long enough
    for a per-read timeout, never done within a sane deadline."""

    def __init__(self, interval_s: float = 0.2, body: bytes | None = None) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.body = body or (b'{"choices": [{"message": {"content": "' + b"x" * 10_000 + b'"}}]}')

    def respond(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(self.body)))
        handler.end_headers()
        for index in range(len(self.body)):
            if self.stopping.wait(self.interval_s):
                return
            handler.wfile.write(self.body[index:index + 1])
            handler.wfile.flush()


class BigReplyServer(_Server):
    """Sends a 200 reply of ``size`` bytes as fast as it can (a reply past any sane cap);
    without ``says_length`` it sends no Content-Length and the reply ends when it closes,
    so the client learns how long it is only by reading it."""

    def __init__(self, size: int, says_length: bool = True) -> None:
        super().__init__()
        self.size = size
        self.says_length = says_length

    def respond(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.says_length:
            handler.send_header("Content-Length", str(self.size))
        handler.end_headers()
        chunk = b"x" * 65536
        sent = 0
        while sent < self.size and not self.stopping.is_set():
            handler.wfile.write(chunk[: self.size - sent])
            sent += len(chunk)
