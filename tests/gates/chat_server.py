"""A real chat-completions server on 127.0.0.1 with scripted replies, for judge and consistency.

Tests queue replies (``server.script(...)``); each request takes the next one, or the default
when the queue is empty. Every request is recorded (headers and JSON body) so tests can
check what was sent, and that nothing was sent.

A ``route`` (given to the constructor, or set later) is a function from the recorded
request to its reply, or None to fall back to the queue: the entailment tests answer by a
fixed rule; under concurrency, where a queue cannot say which request gets which reply,
``route=scripted_by_prompt`` lets each request carry its own script (see that function).
``keep_alive=True`` speaks HTTP/1.1 and keeps connections open, as real providers do.
``tls=`` (a server-side ``ssl.SSLContext``) serves HTTPS, each handshake in the connection's
own thread. ``messages_api=True`` makes it speak Anthropic's Messages API instead: every
chat-completion reply (scripted, routed or the default) is sent as the Messages ``message``
it stands for (checked against the official ``anthropic`` package's type), every error body
in Anthropic's error shape; a reply already in Messages form (or a raw string) goes as it is. ``python chat_server.py [PORT]`` runs one as a process and prints its URL.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import anthropic
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


# A chat-completions finish reason as the Messages API's stop reason.
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}


def message_reply(reply: Reply) -> Reply:
    """``reply`` as a Messages API server sends it: a chat completion as its ``message``, an
    OpenAI-shaped error as Anthropic's; anything else unchanged."""
    body = reply.body
    if isinstance(body, dict) and "choices" in body:
        return attrs.evolve(reply, body=_message(body))
    if isinstance(body, dict) and set(body) == {"error"} and isinstance(body["error"], dict):
        kind = "overloaded_error" if reply.status == 529 else "rate_limit_error" if reply.status == 429 else "api_error"
        return attrs.evolve(reply, body={"type": "error", "error": {"type": kind, **body["error"]}})
    return reply


def _message(body: dict[str, Any]) -> dict[str, Any]:
    choice = body["choices"][0]
    said = choice["message"]
    content: list[dict[str, Any]] = [{"type": "text", "text": said["content"]}] if said.get("content") else []
    for call in said.get("tool_calls") or ():
        content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                        "input": json.loads(call["function"]["arguments"])})
    usage = body.get("usage") or {}
    out = {"id": "msg_test", "type": "message", "role": "assistant", "model": "scripted", "content": content,
           "stop_reason": _STOP_REASONS.get(choice.get("finish_reason"), "end_turn"), "stop_sequence": None,
           "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}}
    anthropic.types.Message.model_validate(out)  # a reply the official client reads
    return out


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


SCRIPT_MARK = '{"script":'
_counter = itertools.count(1)


def scripted_by_prompt(recorded: Recorded) -> Reply | None:
    """The reply a request's own prompt scripts, or None (then the queue or the default).

    The last message's text (for a judge: the fenced task inside it) holds
    ``{"script": {"<model>": SPEC, ...}}`` keyed by the upstream model name. SPEC is the
    reply text, or an object: ``{"text": s}``, ``{"status": 500}`` (an error reply),
    ``{"delay": seconds}`` (a hang, with ``text`` after it), ``{"vary": true}`` (the text
    with a fresh number after it on every call, so no two replies agree), ``{"status": 400,
    "echo": "authorization"}`` (an error whose message repeats that request header, as
    careless providers do; ``"pad": n`` puts n characters before it), ``{"text": "... ECHO
    ...", "echo_in_text": "authorization"}`` (a 200 completion whose text repeats that header
    in place of ECHO), ``{"text": s, "usage": [prompt, completion]}`` (those token counts).
    ``"headers": [[name, value], ...]`` adds headers to any reply.
    """
    body = recorded.body if isinstance(recorded.body, dict) else {}
    messages = body.get("messages") or [{}]
    text = str(messages[-1].get("content") or "")
    start = text.find(SCRIPT_MARK)
    if start < 0:
        return None
    try:
        script, _ = json.JSONDecoder().raw_decode(text, start)
        spec = script["script"].get(body.get("model"))
    except (ValueError, KeyError, AttributeError):
        return None
    if spec is None:
        return None
    if isinstance(spec, str):
        return completion(spec)
    reply_text = str(spec.get("text", ""))
    if spec.get("vary"):
        reply_text = f"{reply_text} {next(_counter)}"
    headers = tuple((str(name), str(value)) for name, value in spec.get("headers", ()))
    if "status" in spec:
        echoed = "x" * int(spec.get("pad", 0)) + recorded.headers.get(spec.get("echo", ""), "")
        return Reply(status=int(spec["status"]), body={"error": {"message": f"scripted {spec['status']} {echoed}"}},
                     headers=headers)
    if "echo_in_text" in spec:
        reply_text = reply_text.replace("ECHO", recorded.headers.get(spec["echo_in_text"], ""))
    reply = completion(reply_text, *spec["usage"]) if "usage" in spec else completion(reply_text)
    return attrs.evolve(reply, delay_s=float(spec.get("delay", 0.0)), headers=headers)


class _Server(ThreadingHTTPServer):
    # The stdlib's backlog of 5 drops connections when a gateway opens a hundred at once.
    request_queue_size = 256
    tls: ssl.SSLContext | None = None

    def finish_request(self, request, client_address) -> None:
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                # A client that failed the handshake (the tests about TLS make them): close as
                # a web server does, reading what the client sent first, so the alert reaches it
                # rather than a reset.
                _linger(request)
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address) -> None:
        if self.tls is None:
            super().handle_error(request, client_address)
        # A TLS client refused after the handshake (no client certificate) ends here: expected.


def _linger(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(1.0)
        while sock.recv(65536):
            pass
    except OSError:
        pass


class ChatServer:
    def __init__(self, route: Callable[[Recorded], Reply | None] | None = None, keep_alive: bool = False,
                 port: int = 0, tls: ssl.SSLContext | None = None, messages_api: bool = False) -> None:
        self.requests: list[Recorded] = []
        self.messages_api = messages_api
        self.default = grade()
        self.route = route
        self._queue: list[Reply] = []
        # The most requests the server has held at once (a bound on concurrency shows here).
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._held: threading.Barrier | None = None
        self._http = _Server(("127.0.0.1", port), _handler_for(self, keep_alive))
        self._http.tls = tls
        self._http.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) quick.
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    @property
    def root(self) -> str:
        """The server's origin: an Anthropic provider's base_url (admiss adds /v1/messages)."""
        host, port = self._http.server_address[:2]
        return f"{'https' if self._http.tls else 'http'}://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, recorded: Recorded) -> Reply:
        reply = self._next_reply(recorded)
        return message_reply(reply) if self.messages_api else reply

    def _next_reply(self, recorded: Recorded) -> Reply:
        routed = self.route(recorded) if self.route is not None else None
        with self._lock:
            self.requests.append(recorded)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if routed is not None:
                return routed
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


def _handler_for(server: ChatServer, keep_alive: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

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
                if not any(name.lower() == "content-type" for name, _ in reply.headers):
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


if __name__ == "__main__":
    # A fake upstream in a process of its own (benchmarks): every request gets one short
    # completion; nothing is recorded, so memory stays flat under load.
    standalone = ChatServer(keep_alive=True, port=int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    standalone.default = completion('{"answer": 42}')
    standalone.next_reply = lambda recorded: standalone.default  # type: ignore[method-assign]
    print(standalone.url, flush=True)
    standalone._http.serve_forever()
