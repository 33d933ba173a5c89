"""Issue 18, item 7: every header an upstream sends is untrusted. A hostile ``Retry-After``
on a 429 (``nan``, ``inf``, ``-1``, huge, garbage, a date far in the future) gets the
request its receipt and escalates it as a model fault: never a 500 or a traceback."""

from __future__ import annotations

import asyncio

import openai
import pytest
from gatewaykit import GOOD, prompt, upstream_calls

HOSTILE = ["nan", "inf", "-inf", "-1", "1e999", "99999999999999999999", "9" * 3000, "soon", "1.5", "",
           "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT", "Tue, 99 Foo 2026 99:99:99 GMT",
           "²", "3600"]


def test_a_hostile_retry_after_escalates_with_a_receipt(gateway, upstream):
    async def one(client, value: str):
        script = {"cheap": {"status": 429, "headers": [["Retry-After", value]]}, "strong": GOOD}
        marker, text = prompt(script)
        reply = await client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
        return marker, reply

    async def go():
        async with gateway.async_client(timeout=30) as client:
            return await asyncio.gather(*(one(client, value) for value in HOSTILE))

    store = gateway.store()
    for value, (marker, reply) in zip(HOSTILE, asyncio.run(go())):
        assert reply.choices[0].message.content == GOOD, value
        admiss = reply.model_extra["admiss"]
        assert admiss["served_rung"] == "strong"
        receipt = store.get(admiss["receipt_id"])
        [error] = receipt["model_errors"]
        assert error["rung"] == "cheap" and error["error"].startswith("provider fake: HTTP 429"), value
        # At most the one retry max_retries allows; a value past the ceiling, none.
        assert upstream_calls(upstream, marker)[-1] == "strong"
        assert len(upstream_calls(upstream, marker)) in (2, 3)
    assert "Traceback" not in gateway.log.read_text()


@pytest.mark.parametrize("headers", [
    [["Content-Length", "99999999999999999999999"]],
    [["Content-Length", "-5"]],
    [["Content-Length", "²"]],
    [["Content-Type", "application/json; charset=nonsense"]],
    [["Content-Encoding", "gzip"]],
    [["Transfer-Encoding", "chunked, gzip"]],
])
def test_lying_framing_headers_escalate_with_a_receipt(gateway, upstream, headers):
    marker, text = prompt({"cheap": {"text": GOOD, "headers": headers}, "strong": GOOD})
    reply = gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    admiss = reply.model_extra["admiss"]
    receipt = gateway.store().get(admiss["receipt_id"])
    if admiss["served_rung"] == "strong":
        [error] = receipt["model_errors"]
        assert error["rung"] == "cheap" and error["error"].startswith("provider fake: ")
    else:  # the reply could be read despite the header
        assert admiss["served_rung"] == "cheap" and receipt["model_errors"] == []
    assert "Traceback" not in gateway.log.read_text()
