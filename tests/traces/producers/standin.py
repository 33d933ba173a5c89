"""A stand-in model on 127.0.0.1 for the producer scripts: it answers OpenAI Chat
Completions and Responses calls from a fixed script, so each producer runs offline.

The script: a request with no tool result in it is answered with two tool calls,
``get_weather`` (which the producers' tool answers) and ``book_flight`` (whose tool
raises); a request that carries tool results is answered with the final text, or, when
the request offers a ``submit`` tool (an agent that ends by submitting), with a call of
``submit`` carrying that text.
Not a test: the producer scripts beside it import it.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINAL_TEXT = "It is sunny in Paris. I could not book the flight."
CALLS = (("call_weather_1", "get_weather", {"city": "Paris"}), ("call_book_1", "book_flight", {"to": "Paris"}))


def _answered(body: dict) -> bool:
    """Whether the request already carries a tool result."""
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            return True
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("type") == "function_call_output" for item in items)


def _offers_submit(body: dict) -> bool:
    return any((tool.get("function") or tool).get("name") == "submit" for tool in body.get("tools") or [])


def _chat(body: dict) -> dict:
    if _answered(body) and _offers_submit(body):
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_submit_1", "type": "function",
             "function": {"name": "submit", "arguments": json.dumps({"answer": FINAL_TEXT})}}]}
        finish = "tool_calls"
    elif _answered(body):
        message = {"role": "assistant", "content": FINAL_TEXT}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
            for call_id, tool, args in CALLS]}
        finish = "tool_calls"
    return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 1764576000, "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}}


def _responses(body: dict) -> dict:
    if _answered(body):
        output = [{"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}]
    else:
        output = [{"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": tool,
                   "arguments": json.dumps(args), "status": "completed"} for call_id, tool, args in CALLS]
    return {"id": "resp_standin", "object": "response", "created_at": 1764576000, "model": body.get("model"),
            "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        reply = _responses(body) if self.path.endswith("/responses") else _chat(body)
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def serve() -> str:
    """Start the stand-in on a free port of 127.0.0.1; its base URL (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"
