"""A fast fake chat-completions upstream for the gateway benchmark:
``python fake_upstream.py [DELAY_S [SPREAD_S]]`` prints its port, then answers every POST with
the same small completion after DELAY_S seconds (default 0: a model's time to reply), or,
with SPREAD_S, after a time drawn uniformly from DELAY_S ± SPREAD_S (a model whose reply
time varies), over HTTP/1.1 keep-alive, on one asyncio loop (uvloop when installed).

The test suite's upstream (tests/gates/chat_server.py) logs and scripts every call and runs
a thread per connection; here only the gateway's own cost should show, so the upstream
does as little as it can.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys

BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"answer": 42}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
}).encode()
DELAY_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
SPREAD_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
RESPONSE = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if SPREAD_S:
                await asyncio.sleep(random.uniform(DELAY_S - SPREAD_S, DELAY_S + SPREAD_S))
            elif DELAY_S:
                await asyncio.sleep(DELAY_S)
            writer.write(RESPONSE)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main())
