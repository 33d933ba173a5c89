"""The gateway's wire formats, one module each: :mod:`.openai_chat` (``POST
/v1/chat/completions``) and :mod:`.anthropic_messages` (``POST /v1/messages``).

Each module reads a request body into the gateway's neutral
:class:`~admiss.serve.router.Request` (what the rungs' providers are sent, and the
conversation for the trace reader of its format), and writes a
:class:`~admiss.serve.router.Served` back as its response body or its event stream, and an
error in its own shape. The routes (app.py) move bytes and call these; the chains, the
receipts, the metrics and the keys are the same whatever the format.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from admiss import jsonio
from admiss.serve.router import Request, Served


@attrs.frozen
class Incoming:
    """A request body as its wire format reads it: the neutral request and how to answer."""

    request: Request
    stream: bool
    # OpenAI's stream_options.include_usage: a last chunk with the usage.
    include_usage: bool = False


def repeated_key(raw: bytes, body: Any, incoming: Incoming | None = None) -> tuple[str, int] | None:
    """jsonio.first_repeated_key of a request body. Once its wire module read it
    (``incoming``), the body written back is made from its messages' run keys, which the
    messages' memo made from these very messages (of the body's own ``messages``, in either
    wire format): the messages, nearly all of an agent's body, are not written a second time
    (12-20 K of an agent request's 2 M instructions, benchmarks/callgrind_gateway.py)."""
    known = incoming.request.known if incoming is not None else None
    back = jsonio.with_part(body, "messages", known.text) if known is not None else None
    return jsonio.first_repeated_key(raw, body, back)


def admiss_object(served: Served) -> dict[str, Any]:
    """What the gateway adds to every served answer, in either format: the receipt and the costs."""
    chain = served.receipt["chain"]
    return {"receipt_id": served.receipt["id"], "served_rung": served.rung, "outcome": served.outcome,
            "model_cost_usd": chain["model_cost_usd"], "gate_cost_usd": chain["gate_cost_usd"]}


_PIECE = re.compile(r"\s*\S+\s*|\s+")


def pieces(text: str) -> list[str]:
    """A verified text cut into the pieces a stream sends, a word or so each."""
    return _PIECE.findall(text)


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event carrying ``data`` as JSON (named ``event`` when given)."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + jsonio.dumps_line(data) + b"\n\n"
