"""Showing untrusted text on a terminal: what a bundle, a trace or a rubric file wrote must
not act on the terminal that shows it, nor pass for a line that admiss wrote.

Two renderings: ``printable`` (and ``one_line``) write each such character as its Python
escape, for reports; ``pictured`` puts one visible character in its place, for the quoted
source line of a diagnostic, whose caret must stay under the column it points at.
"""

from __future__ import annotations

import re

# What could act on a terminal: a control character (an escape sequence could clear the
# screen or rewrite a line, a carriage return overwrite one), a bidirectional override (it
# could show text in another order than it has), and a lone surrogate (JSON allows
# "\ud800", but no stream can print it). Tabs and line ends are the caller's to decide.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """``text`` with every character that could act on a terminal written as its escape;
    line ends and tabs are kept."""
    return text if _UNPRINTABLE.search(text) is None else _UNPRINTABLE.sub(_escaped, text)


def one_line(text: str) -> str:
    """``printable(text)`` with its line ends escaped too: a field of the report that a
    bundle wrote must not start a line of its own (a forged "verdict: pass")."""
    text = printable(text)
    return text if "\n" not in text else text.replace("\n", "\\n")


def pictured(text: str) -> str:
    """``text`` with each such character as one visible character in its place: a C0
    control as its Control Pictures symbol (ESC as ␛), anything else as the replacement
    character."""
    return text if _UNPRINTABLE.search(text) is None else _UNPRINTABLE.sub(_picture, text)


def _picture(match: re.Match) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"
