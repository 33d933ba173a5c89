"""The readers agree with the plain reference readers on random well-formed traces, and
account for every element of the source exactly once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import trace_reference as ref
import trace_strategies as strategies
from admiss.traces.read import read_trace

FORMATS = ["openai_chat"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_reader_agrees_with_reference(fmt):
    @settings(max_examples=150, deadline=None)
    @given(getattr(strategies, fmt)())
    def agrees(drawn):
        value, elements = drawn
        named = read_trace(value, "t.json", fmt)
        assert ref.rows_of_trace(named) == getattr(ref, fmt)(value)
        accounted = ref.accounted_paths(named)
        assert sorted(accounted) == sorted(elements)
        assert len(set(accounted)) == len(accounted)
        assert read_trace(value, "t.json") == named  # detected as the format it was built in

    agrees()
