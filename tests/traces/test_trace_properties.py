"""The readers agree with the plain reference readers on random well-formed traces, and
account for every element of the source exactly once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import trace_reference as ref
import trace_strategies as strategies
from admiss.traces.read import read_trace

FORMATS = ["openai_chat", "openai_responses", "anthropic", "otel_genai", "adk"]
ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def anthropic_marks(value) -> bool:
    """Whether an Anthropic trace holds something Chat Completions has not (docs/traces.md)."""
    messages = value["messages"] if isinstance(value, dict) else value
    return (isinstance(value, dict) and "system" in value) or any(
        isinstance(m["content"], list) and any(b["type"] in ANTHROPIC_BLOCKS for b in m["content"]) for m in messages)


# Traces that hold nothing only their own format has, and so read as the first format, openai_chat.
UNMARKED = {"anthropic": lambda value: not anthropic_marks(value), "openai_responses": lambda value: value == []}


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
        detected = read_trace(value, "t.json")
        if detected.format != fmt:  # only a trace with no mark of its own format may read as another
            assert detected.format == "openai_chat" and UNMARKED[fmt](value)
        else:
            assert detected == named

    agrees()
