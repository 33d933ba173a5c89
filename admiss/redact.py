"""Secrets out of every text admiss shows: one function, :func:`redact`, applied where
reasons and error messages are made (provider errors, gate reasons in the cascade, receipts,
diagnostics when rendered), and always before a text is cut short (:func:`clipped`), so a
secret straddling the cut cannot keep its first part.

Two kinds of secret are replaced by ``***``: the user-info of a URL
(``https://user:pass@host`` becomes ``https://***@host``), wherever a URL is quoted, and the
known secret values: the values of the environment variables that admiss.toml names as
provider keys (``api_key_env``), and each provider URL's user-info in the forms a server may
echo it (:func:`url_secrets`), wherever a server or a program echoes them.
"""

from __future__ import annotations

import base64
import functools
import re
from typing import Any, Iterable, Mapping
from urllib.parse import unquote, urlsplit

from admiss.jsonio import dumps_line

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

    if _has_user_info(text):
        text = _USERINFO.sub(lambda m: f"{m[1]}{mask(m[0][len(m[1]):-1])}@", text)
    for secret in _longest_first(secrets):
        text = text.replace(secret, mask(secret))
    return text


def _longest_first(secrets: Iterable[str]) -> tuple[str, ...]:
    """``secrets``, longest first, so a secret holding another is masked whole."""
    if type(secrets) is not tuple:
        return tuple(sorted(secrets, key=len, reverse=True))
    # Every gate reason and provider error of a request is redacted with the gateway's
    # one tuple of secrets, mostly none: sorted once, not at every call.
    return secrets if len(secrets) < 2 else _sorted_once(secrets)


@functools.lru_cache(maxsize=16)
def _sorted_once(secrets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(secrets, key=len, reverse=True))


def key_values(env_names: Iterable[str | None], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the named environment variables worth masking (set, and long enough)."""
    values = (environ.get(name) for name in env_names if name)
    return tuple(value for value in values if value and len(value) >= MIN_SECRET_LENGTH)


def _has_user_info(text: str) -> bool:
    # The pattern tries every word of a text: plain substring tests first are 40x faster.
    # "@" first: a one-character test is a memchr, while "://" in a JSON text full of ":"
    # crawls (18 us against 0.2 us for a 7.5 KB receipt, python -m timeit); user-info needs both.
    return "@" in text and "://" in text and _USERINFO.search(text) is not None


def clipped(text: str, limit: int, secrets: Iterable[str] = (), more: str = "...") -> str:
    """``text`` redacted, then cut to ``limit`` characters (with ``more`` when cut).

    Every cut of a text admiss did not write goes through here (or :func:`clipped_tail`):
    cut first, a secret straddling the cut would keep the part before it."""
    text = redact(text, secrets)
    return text if len(text) <= limit else text[:limit] + more


def clipped_tail(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """``text`` redacted, then its last ``limit`` characters (after ``...`` when cut)."""
    text = redact(text, secrets)
    return text if len(text) <= limit else "..." + text[len(text) - limit:]


def holds_secret(text: str, secrets: Iterable[str]) -> bool:
    """Whether ``text`` contains one of ``secrets`` verbatim."""
    return any(secret in text for secret in secrets)


def redacted_tree(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string redacted;
    ``value`` itself when nothing in it needs redacting."""
    return redacted_and_text(value, secrets)[0]


def redacted_and_text(value: Any, secrets: Iterable[str] = ()) -> tuple[Any, str | None]:
    """:func:`redacted_tree`'s value, and its compact JSON text (jsonio.dumps_line's) when
    that is ``value`` itself as the look found it, else None: a caller that writes the value
    out takes the text rather than encoding it again (the receipt's row, receipts/store.py)."""
    secrets = tuple(secrets)
    # One look at the whole as JSON text first: most receipts hold nothing to mask, and
    # walking every string of one costs several times this look. JSON escapes only add backslashes, so a URL's user-info still shows in the text;
    # a secret with a character JSON escapes is looked for by the walk instead.
    if all(_json_safe(s) for s in secrets):
        text = dumps_line(value).decode("utf-8")
        if not holds_secret(text, secrets) and not _has_user_info(text):
            return value, text
    return _walked(value, secrets), None


def _json_safe(secret: str) -> bool:
    """Whether JSON writes ``secret`` as it is (no quote, backslash or control character;
    isprintable() also refuses a few characters JSON keeps, which only costs a walk)."""
    return '"' not in secret and "\\" not in secret and secret.isprintable()


def _walked(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _walked(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_walked(item, secrets) for item in value]
    return value


def url_secrets(urls: Iterable[str]) -> tuple[str, ...]:
    """The user-info of each URL in every form a server may echo it back: as written,
    percent-decoded, the password alone, and base64 as a Basic ``Authorization`` carries it.
    Forms shorter than :data:`MIN_SECRET_LENGTH` are left out (they would mask ordinary
    words); the URL pattern of :func:`redact` still masks them inside a URL."""
    forms: set[str] = set()
    for url in urls:
        netloc = urlsplit(url).netloc
        if "@" not in netloc:
            continue
        info = netloc.rpartition("@")[0]
        decoded = unquote(info)
        forms |= {info, decoded, decoded.partition(":")[2], base64.b64encode(decoded.encode()).decode()}
    return tuple(form for form in forms if len(form) >= MIN_SECRET_LENGTH)
