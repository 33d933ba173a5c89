"""Real rubric text for the fuzz tests: the shipped rubrics and docs/language.md's fences,
cut at the boundaries of the tokens admiss's own lexer finds in them."""

from __future__ import annotations

import re
from pathlib import Path

from admiss.parser import expected_after

ROOT = Path(__file__).resolve().parents[2]


def texts() -> list[str]:
    shipped = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "rubrics").glob("*.rubric"))]
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    fences = re.findall(r"^```rubric[^\n]*\n(.*?)^```", page, re.S | re.M)
    return shipped + fences


def boundaries(text: str) -> list[int]:
    """Offsets where a token of ``text`` starts or ends (only for a text the parser reads through)."""
    found = expected_after(text)
    if found is None:
        return []
    return sorted({0, len(text), *(t.start_pos for t in found[0]), *(t.end_pos for t in found[0])})


def grammar_keywords() -> list[str]:
    """The keywords grammar/rubric.lark defines, read from its terminal definitions."""
    text = (ROOT / "grammar" / "rubric.lark").read_text(encoding="utf-8")
    return re.findall(r"^_?[A-Z]+: /([A-Z]+)\(\?!", text, re.M)


# The grammar's other pieces: punctuation, and a few of each kind of token and of mistake.
PIECES = ["{", "}", "[", "]", ",", "==", "\n", " ", "p", "q1", "summary", "lab_result", "judge", "admissibility",
          "non_empty", "fail_closed", "yes", "no", "ok", "failed", "args.x", "result.status", '"a label"', '"',
          '"\\q"', "0.7", "5", "-1", "5s", "500ms", "# comment", "# admiss: ignore[ADM004]", "\t", "\u00e9",
          "\U0001F600", "=", "!="]
