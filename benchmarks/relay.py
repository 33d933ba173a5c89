"""A byte relay for the gateway benchmark: ``python relay.py UPSTREAM_PORT`` prints its port,
then copies every connection's bytes to a connection of its own to the upstream and back,
on one asyncio loop (uvloop when installed), reading and deciding nothing.

It is one more hop with no work in it: its added latency is what any gateway, however
fast, adds on this machine (two more wake-ups of a process per request, two more socket
round trips), measured in the same run as the gateway's.
"""

from __future__ import annotations

import asyncio
import sys

from loopback import serve_forever

UPSTREAM_PORT = int(sys.argv[1])


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
    except ConnectionError:
        pass
    finally:
        writer.close()


async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM_PORT)
    await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))


if __name__ == "__main__":
    serve_forever(relay)
