"""A stand-in model on 127.0.0.1 for the producer scripts: it answers OpenAI Chat
Completions requests with replies scripted in advance, one per request, so a real agent
library can run offline and write its real trace.

Used by the scripts beside it; not imported by the test suite.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    """A scripted reply: the model calls one tool."""
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def text(content: str) -> dict:
    """A scripted reply: the model answers in text."""
    return {"role": "assistant", "content": content}


class StandInModel:
    """A chat-completions server answering with ``replies`` in order (the last one again
    once they run out). ``url`` is its base URL (``http://127.0.0.1:PORT/v1``). With
    ``gemini``, it answers the Gemini API's generateContent instead (``url`` without /v1)."""

    def __init__(self, replies: list[dict], model: str = "gpt-4o-mini-2024-07-18", gemini: bool = False):
        self.replies, self.model, self.requests, self.gemini = list(replies), model, [], gemini
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.requests.append(body)
                reply = outer.replies.pop(0) if len(outer.replies) > 1 else outer.replies[0]
                payload = json.dumps(outer.generated(reply) if outer.gemini else outer.completion(reply)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}" + ("" if gemini else "/v1")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def completion(self, message: dict) -> dict:
        return {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": self.model, "choices": [{"index": 0, "message": message,
                                                  "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}

    def generated(self, message: dict) -> dict:
        """``message`` (a scripted chat message) as a Gemini generateContent response."""
        # The Gemini API gives a function call no id (a scripted call with an empty id is sent so).
        parts = [{"functionCall": {**({"id": call["id"]} if call["id"] else {}), "name": call["function"]["name"],
                                   "args": json.loads(call["function"]["arguments"])}}
                 for call in message.get("tool_calls") or ()] or [{"text": message["content"]}]
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 10, "totalTokenCount": 60},
                "modelVersion": self.model}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def otlp_json(spans) -> dict:
    """Finished OpenTelemetry SDK spans as an OTLP JSON trace export (hex ids, as the OTLP
    JSON encoding writes them)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return _hex_ids(encode_spans(spans), "resourceSpans", "scopeSpans", "spans")


def otlp_logs_json(records) -> dict:
    """Emitted OpenTelemetry SDK log records as an OTLP JSON logs export (hex ids)."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    return _hex_ids(encode_logs(records), "resourceLogs", "scopeLogs", "logRecords")


def _hex_ids(request, resources: str, scopes: str, items: str) -> dict:
    from google.protobuf.json_format import MessageToDict

    exported = MessageToDict(request)
    for resource in exported.get(resources, []):
        for scope in resource.get(scopes, []):
            for item in scope.get(items, []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:
                        item[key] = _hex(item[key])
    return exported


def _hex(base64_id: str) -> str:
    import base64

    return base64.b64decode(base64_id).hex()


def write(path, value: Any) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(value, out, indent=1, ensure_ascii=False)
        out.write("\n")
