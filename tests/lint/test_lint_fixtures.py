"""Each fixture in tests/lint/fixtures/ gives exactly the findings its comments expect.

Convention: a line where a finding is expected ends with ``# expect: CODE`` (several codes
comma-separated); every other line must stay silent. A finding belongs to the line its
span starts on.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from admiss.lint import lint_source
from admiss.parser import parse_with_comments
from admiss.source import Source

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_EXPECT = re.compile(r"expect:\s*((?:[A-Z]+\d{3}\s*,?\s*)+)")


def expected(path: Path) -> Counter:
    source = Source(path.name, path.read_text(encoding="utf-8"))
    _, comments = parse_with_comments(source)
    found = Counter()
    for comment in comments:
        match = _EXPECT.search(comment.text)
        if match:
            found.update((comment.span.line, code.strip()) for code in match.group(1).split(",") if code.strip())
    return found


def actual(path: Path) -> Counter:
    return Counter((d.span.line, d.code) for d in lint_source(path.read_text(encoding="utf-8"), str(path)))


ALL = sorted(FIXTURES.glob("*.rubric"))


def test_there_are_fixtures():
    assert len(ALL) >= 23


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_fixture_gives_exactly_the_expected_findings(path: Path):
    want = expected(path)
    assert want, "a fixture must expect at least one finding"
    assert actual(path) == want


@pytest.mark.parametrize("path", [p for p in ALL if p.stem.startswith("ADM")], ids=lambda p: p.stem)
def test_fixture_expects_its_own_rule(path: Path):
    code = path.stem.split("_", 1)[0]
    assert code in {c for _, c in expected(path)}
