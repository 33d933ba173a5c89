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
