"""A fast fake chat-completions upstream for the gateway benchmark:
``python fake_upstream.py [DELAY_S [SPREAD_S]]`` prints its port, then answers every POST with
a small JSON completion after DELAY_S seconds (default 0: a model's time to reply), or,
with SPREAD_S, after a time drawn uniformly from DELAY_S ± SPREAD_S (a model whose reply
time varies), over HTTP/1.1 keep-alive, on one asyncio loop (uvloop when installed).

The completion's content is ``{"answer": 42, "upstream_ms": T}``: T is how long this
server held the request, from having read it to writing the reply, so the benchmark can
take each request's own upstream time out of its latency.

The test suite's upstream (tests/gates/chat_server.py) logs and scripts every call and runs
a thread per connection; here only the gateway's own cost should show, so the upstream
does as little as it can.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time

from loopback import read_request, serve_forever

# The reply with a placeholder for the time held, filled in per request.
HELD = "__HELD__"
BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": f'{{"answer": 42, "upstream_ms": {HELD}}}'},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
})
DELAY_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
SPREAD_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


def response(held_s: float) -> bytes:
    body = BODY.replace(HELD, f"{held_s * 1000:.3f}").encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            await read_request(reader)
            started = time.perf_counter()
            if SPREAD_S:
                await asyncio.sleep(random.uniform(DELAY_S - SPREAD_S, DELAY_S + SPREAD_S))
            elif DELAY_S:
                await asyncio.sleep(DELAY_S)
            writer.write(response(time.perf_counter() - started))
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


if __name__ == "__main__":
    serve_forever(answer)
