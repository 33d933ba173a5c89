"""A loopback OTLP/HTTP receiver for the telemetry benchmark: ``python otlp_sink.py`` prints
its port, then answers every POST (an export of spans or log records) with 200 and an empty
body, reading but not decoding it, so that the cost measured is the exporting process's.
``GET`` answers ``{"posts": N, "bytes": M}``: what arrived so far, so the benchmark can
tell that telemetry did go out."""

from __future__ import annotations

import asyncio
import json

from loopback import read_request, serve_forever

RECEIVED = {"posts": 0, "bytes": 0}
EMPTY = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head, body = await read_request(reader)
            if head.startswith(b"POST"):
                RECEIVED["posts"] += 1
                RECEIVED["bytes"] += len(body)
                writer.write(EMPTY)
            else:
                body = json.dumps(RECEIVED).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


if __name__ == "__main__":
    serve_forever(answer)
