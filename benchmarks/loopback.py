"""Run a benchmark helper server: a stream handler on a free port of 127.0.0.1, the port
printed on stdout (the benchmark reads it), on uvloop when installed."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(head, body) of the next HTTP/1.1 request on a keep-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    return head, await reader.readexactly(content_length(head))


def content_length(head: bytes) -> int:
    """The Content-Length a request's head says (0 when it says none)."""
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return length


def serve_forever(handler: Handler) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(_serve(handler))


async def _serve(handler: Handler) -> None:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
