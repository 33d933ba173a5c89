"""A loopback OTLP/HTTP receiver: a real HTTP server on 127.0.0.1 that decodes what the
OpenTelemetry exporters send (ExportTraceServiceRequest to /v1/traces,
ExportLogsServiceRequest to /v1/logs, protobuf, optionally gzip or deflate) with opentelemetry-proto,
and keeps it for tests to assert on."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest, ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)

_DECODERS = {"/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
             "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse)}


def value_of(any_value: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


def attributes_of(holder: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in holder.attributes}


class Receiver:
    def __init__(self, delay_s: float = 0.0) -> None:
        """``delay_s``: each POST is read only after this long, as a far collector's answer
        comes late (what arrives is recorded once read)."""
        self.requests: dict[str, list[Any]] = {path: [] for path in _DECODERS}
        # Each POST's path and headers (names in lower case), as it came.
        self.posts: list[tuple[str, dict[str, str]]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                time.sleep(delay_s)
                decoders = _DECODERS.get(self.path)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    receiver.posts.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                elif self.headers.get("content-encoding") == "deflate":
                    body = zlib.decompress(body)
                if decoders is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                request = decoders[0].FromString(body)
                with receiver.lock:
                    receiver.requests[self.path].append(request)
                reply = decoders[1]().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "Receiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def clear(self) -> None:
        with self.lock:
            for kept in self.requests.values():
                kept.clear()
            self.posts.clear()

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received, with its resource's attributes."""
        with self.lock:
            return [(attributes_of(rs.resource), span) for request in self.requests["/v1/traces"]
                    for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]

    def log_records(self) -> list[tuple[dict[str, Any], Any]]:
        """Every log record received, with its resource's attributes."""
        with self.lock:
            return [(attributes_of(rl.resource), record) for request in self.requests["/v1/logs"]
                    for rl in request.resource_logs for sl in rl.scope_logs for record in sl.log_records]

    def wait_for(self, enough: Callable[["Receiver"], bool], timeout_s: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if enough(self):
                return True
            time.sleep(0.05)
        return enough(self)


def events(receiver: Receiver, name: str = "gen_ai.evaluation.result") -> list[Any]:
    return [record for _, record in receiver.log_records() if record.event_name == name]
