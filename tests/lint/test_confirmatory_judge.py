"""ADM007's test set: the judge texts in its fixture, both halves counted and run.

The fixture test (test_lint_fixtures.py) checks each line's findings; this one keeps the
set from shrinking and names the text that a change of the rule gets wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from admiss.lint import lint_source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ADM007_confirmatory_judge.rubric"
_JUDGE = re.compile(r'RUBRIC "([^"]*)"[^#\n]*(#.*)?$')


def _texts() -> tuple[list[str], list[str]]:
    """The fixture's judge texts: those expected to be flagged, and those expected silent."""
    flagged, silent = [], []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        match = _JUDGE.search(line)
        if match:
            (flagged if "ADM007" in (match.group(2) or "") else silent).append(match.group(1))
    return flagged, silent


FLAGGED, SILENT = _texts()


def _rubric(text: str) -> str:
    return ('CHAIN c {\n  RUNG r MODEL "openai/gpt-5-mini" {\n    GATE non_empty ON ABSTAIN fail_closed\n'
            f'    GATE judge MODEL "openai/gpt-5" RUBRIC "{text}" ON ABSTAIN fail_closed\n  }}\n}}\n')


def _adm007(text: str) -> list[str]:
    return [d.message for d in lint_source(_rubric(text), "t.rubric") if d.code == "ADM007"]


def test_the_set_is_wide_enough():
    assert len(FLAGGED) >= 40 and len(SILENT) >= 40
    assert len(set(FLAGGED + SILENT)) == len(FLAGGED + SILENT)
    # Failure-seeking texts that still say "accurate" or "correct" are in the set.
    assert sum(bool(re.search(r"accurate|correct", t, re.I)) for t in SILENT) >= 3


@pytest.mark.parametrize("text", FLAGGED)
def test_confirmatory_or_rating_only_text_is_flagged(text):
    assert len(_adm007(text)) == 1


@pytest.mark.parametrize("text", SILENT)
def test_failure_seeking_text_is_silent(text):
    assert _adm007(text) == []


def test_a_verdict_before_the_search_is_named():
    (message,) = _adm007("Rate the answer from 0 to 1, then list its flaws.")
    assert "before it asks what could fail" in message and "Rate the answer from 0 to 1" in message


def test_the_hint_shows_a_failure_seeking_rewrite_that_lints_clean():
    (finding,) = [d for d in lint_source(_rubric("Is this correct?"), "t.rubric") if d.code == "ADM007"]
    rewrite = re.search(r'RUBRIC "([^"]+)"', finding.hint).group(1)
    assert _adm007(rewrite) == []
