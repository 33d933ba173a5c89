"""A real chat-completions server on 127.0.0.1 with scripted replies, for judge and consistency.

Tests queue replies (``server.script(...)``); each request takes the next one, or the default
when the queue is empty. A test may instead set ``server.rule``, a function from the recorded
request to its reply, for replies that follow a fixed rule (the entailment tests do). Every
request is recorded (headers and JSON body) so tests can check what was sent, and that
nothing was sent.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import attrs


@attrs.frozen
class Reply:
    status: int = 200
    body: Any = None  # a dict is sent as JSON, a str as it is
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()


def completion(text: str, prompt_tokens: int | None = 100, completion_tokens: int | None = 20) -> Reply:
    """A 200 chat-completion reply whose message content is ``text``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if prompt_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + (completion_tokens or 0),
        }
    return Reply(body=body)


def grade(score: float = 0.9, **overrides: Any) -> Reply:
    """A judge reply in the required shape; ``overrides`` replace or add keys."""
    data: dict[str, Any] = {
        "failure_hypotheses": ["the total may be miscounted"],
        "evidence": ["the items sum to the total"],
        "rationale": "checked the sum",
        "score": score,
    }
    data.update(overrides)
    return completion(json.dumps(data))


@attrs.frozen
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any

    def fenced(self) -> dict[str, str]:
        """The texts fenced in the last message, by label (``TASK``, ``ANSWER_A``, ...)."""
        content = self.body["messages"][-1]["content"]
        return {m[1]: m[3] for m in _FENCE.finditer(content)}


_FENCE = re.compile(r"<<<(\w+) (\w+)>>>\n(.*?)\n<<<END \1 \2>>>", re.S)


class ChatServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.default = grade()
        # When set, every request's reply is rule(request): the queue and default are unused.
        self.rule: Callable[[Recorded], Reply] | None = None
        self._queue: list[Reply] = []
        # The most requests the server has held at once (a bound on concurrency shows here).
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._held: threading.Barrier | None = None
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) quick.
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self.rule is not None:
                return self.rule(recorded)
            return self._queue.pop(0) if self._queue else self.default

    def hold_replies_until(self, count: int, timeout_s: float = 10.0) -> None:
        """Answer nothing until ``count`` requests are in flight together (proves concurrency)."""
        self._held = threading.Barrier(count, timeout=timeout_s)

    def replied(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def before_reply(self, reply: Reply) -> None:
        if self._held is not None:
            self._held.wait()
        self._stopping.wait(reply.delay_s)

    def start(self) -> "ChatServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._http.shutdown()
        self._http.server_close()


def _handler_for(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"null"))
            reply = server.next_reply(recorded)
            server.before_reply(reply)
            payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = payload.encode("utf-8")
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up, as some tests intend
            finally:
                server.replied()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
