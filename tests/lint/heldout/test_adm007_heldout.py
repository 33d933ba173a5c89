"""ADM007 over the held-out set of judge texts, through the real `admiss lint`.

The set (adm007_phrasings.toml) was written from the rule's docs before the rule was read;
half B was never used to tune it. The misses measured when the rule last changed are
listed below: a change that misses any other text fails here, and a change that fixes one
should take it off the list.
"""

from __future__ import annotations

from collections import Counter

import pytest

import adm007_heldout as heldout
import adm007_split as split

# Misses of the rule as measured (python tests/lint/heldout/adm007_heldout.py).
KNOWN_MISSES = {
    "A": {"h219"},
    "B": {"h016", "h133", "h167", "h184", "h187", "h206", "h218"},
}

PHRASINGS = heldout.phrasings()


@pytest.fixture(scope="module")
def flagged() -> set[str]:
    return heldout.flagged_ids(PHRASINGS)


def test_the_set_is_large_balanced_and_split_by_its_seed():
    assert len(PHRASINGS) >= 200
    assert len({p["id"] for p in PHRASINGS}) == len(PHRASINGS)
    counts = Counter((p["half"], p["expect"]) for p in PHRASINGS)
    assert min(counts.values()) >= 50 and len(counts) == 4
    # The halves in the file are the ones the seed draws: no text moved between them.
    assert {p["id"]: p["half"] for p in PHRASINGS} == split.halves(PHRASINGS)


@pytest.mark.parametrize("half", ["A", "B"])
def test_misses_stay_within_those_measured(flagged, half):
    part = [p for p in PHRASINGS if p["half"] == half]
    missed = {p["id"] for p in heldout.misses(part, flagged)}
    assert missed <= KNOWN_MISSES[half], heldout.report(PHRASINGS, flagged)
    assert len(missed) <= len(KNOWN_MISSES[half])


def test_known_misses_are_still_misses(flagged):
    # A miss that the rule now gets right is to be taken off KNOWN_MISSES, so the figure
    # in the test stays the figure of the rule.
    fixed = {i for half in KNOWN_MISSES.values() for i in half} - {
        p["id"] for p in heldout.misses(PHRASINGS, flagged)}
    assert not fixed
