"""What a gate that shows untrusted text to a model needs: fences the text cannot forge,
and a strict reading of the one JSON object the model must reply with.

The judge and the consistency gate's meaning model share these, so both get the same
protections: a pinned system prompt (each gate's own), untrusted text between delimiters
that carry a fresh random nonce per call (drawn again if the nonce occurs in the text), and
a reply that must be exactly one JSON object with the asked keys in the asked order.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Callable, Sequence

from admiss.jsonio import UnreadableJSON, loads_untrusted
from admiss.untrusted import UntrustedInput


class BadReply(UntrustedInput):
    """The model's reply is not the JSON object asked for; the message says why. The reply is
    about a candidate whose text may have talked the model out of the format, so it is the
    candidate's fault."""


def fresh_nonce(texts: Sequence[str], draw: Callable[[], str] = lambda: secrets.token_hex(12)) -> str:
    """A random token that occurs in none of ``texts`` (the prompt around the fences)."""
    while True:
        nonce = draw()
        if not any(nonce in text for text in texts):
            return nonce


def fenced(label: str, title: str, text: str, nonce: str) -> str:
    """``text`` between an opening and a closing fence that carry ``nonce``, introduced by ``title``."""
    opening, closing = f"<<<{label} {nonce}>>>", f"<<<END {label} {nonce}>>>"
    return f"{title}, untrusted data between {opening} and {closing}:\n{opening}\n{text}\n{closing}"


_MARKDOWN_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.DOTALL | re.IGNORECASE)


def reply_object(reply: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object in a reply, with exactly ``keys`` in that order; BadReply otherwise.

    Surrounding whitespace and one Markdown ```json fence are tolerated, as many models add
    them. The reply is read as untrusted JSON (admiss.jsonio.loads_untrusted): a repeated
    key, an integer too long to convert or nesting too deep is a rejected reply, never an
    exception out of the gate.
    """
    text = reply.strip()
    inside = _MARKDOWN_FENCE.match(text)
    try:
        data = loads_untrusted(inside[1] if inside else text)
    except UnreadableJSON as exc:
        raise BadReply(f"reply is not one JSON object admiss reads ({exc})") from None
    if not isinstance(data, dict):
        raise BadReply(f"reply is JSON but not an object: {type(data).__name__}")
    _check_keys(list(data), keys)
    return data


def _check_keys(keys: list[str], wanted: tuple[str, ...]) -> None:
    missing = [k for k in wanted if k not in keys]
    if missing:
        raise BadReply(f"reply lacks key(s): {', '.join(missing)}")
    extra = [k for k in keys if k not in wanted]
    if extra:
        raise BadReply(f"reply has unexpected key(s): {', '.join(extra)}")
    if tuple(keys) != wanted:
        raise BadReply(f"reply keys out of order: {', '.join(keys)} (want {', '.join(wanted)})")
