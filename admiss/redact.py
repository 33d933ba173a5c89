"""Secrets out of every text admiss shows: one function, applied where reasons and error
messages are made (gate reasons in the cascade, diagnostics when rendered).

Two kinds of secret are replaced by ``***``: the user-info of a URL
(``https://user:pass@host`` becomes ``https://***@host``), wherever a URL is quoted, and the
values of the environment variables that admiss.toml names as provider keys
(``api_key_env``), wherever a server or a program echoes them.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

MASK = "***"
# scheme://userinfo@ : userinfo holds no "/", "@" or whitespace (RFC 3986 percent-encodes them).
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")
# Shorter values would mask ordinary words; no real key is this short.
MIN_SECRET_LENGTH = 8


def redact(text: str, secrets: Iterable[str] = (), same_length: bool = False) -> str:
    """``text`` with URL user-info and every one of ``secrets`` replaced by ``***``.

    ``same_length`` masks with one ``*`` per character instead, so a caret drawn under a
    quoted source line still points at the right column.
    """
    def mask(secret: str) -> str:
        return "*" * len(secret) if same_length else MASK

    text = _USERINFO.sub(lambda m: f"{m[1]}{mask(m[0][len(m[1]):-1])}@", text)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, mask(secret))
    return text


def key_values(env_names: Iterable[str | None], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the named environment variables worth masking (set, and long enough)."""
    values = (environ.get(name) for name in env_names if name)
    return tuple(value for value in values if value and len(value) >= MIN_SECRET_LENGTH)
