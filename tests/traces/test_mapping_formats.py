"""The mapping over random traces of every format agrees with a plain restatement of the
rules applied to the reference readers' rows: every step is offered once or listed as not
offered, with the kind and label the rules say."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

import admiss
import trace_reference as ref
import trace_strategies as strategies

FORMATS = ["openai_chat", "openai_responses", "anthropic", "otel_genai", "adk"]
BOOKING = admiss.load(Path(__file__).resolve().parents[2] / "rubrics" / "booking_cancellation.rubric")
DEFAULTS = admiss.compile_source("PROPERTY p { ADMIT procedurally_sound_tool_call }")
FAILED = {"error", "no_result", "bad_args"}
TEXT_KINDS = {"final_answer": ("final_answer", "final answer"), "reasoning": ("reasoning_trace", "reasoning"),
              "assistant_text": ("interpretation", "assistant message")}


def default_rule(row):
    """(kind, label) the seed's taxonomy gives a reference row, or None (not offered)."""
    kind, _, _, tool, _, _, _, outcome, _ = row
    if kind == "tool_call":
        return ("flawed_tool_call" if outcome in FAILED else "procedurally_sound_tool_call"), tool
    return TEXT_KINDS.get(kind)


def booking_rule(row):
    """rubrics/booking_cancellation.rubric's MAP block, restated."""
    kind, _, _, tool, _, _, result, outcome, _ = row
    if kind != "tool_call":
        return TEXT_KINDS.get(kind)
    status = result.get("status") if isinstance(result, dict) else None
    if tool == "cancel_booking" and outcome == "ok" and status == "cancelled":
        return "procedurally_sound_tool_call", "booking system"
    if tool == "issue_refund" and outcome == "ok" and status == "refunded":
        return "procedurally_sound_tool_call", "payments system"
    if outcome in FAILED:
        return "flawed_tool_call", tool
    if tool.startswith("lookup_"):
        return "interpretation", "booking lookup"
    return "interpretation", tool


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rubric,rule", [(DEFAULTS, default_rule), (BOOKING, booking_rule)], ids=["default", "booking"])
def test_mapping_agrees_with_the_rules_over_reference_rows(fmt, rubric, rule):
    @settings(max_examples=60, deadline=None)
    @given(getattr(strategies, fmt)())
    def agrees(drawn):
        value, _ = drawn
        rows, skipped = getattr(ref, fmt)(value)
        imported = rubric.import_trace(value, "t.json", fmt)
        decided = [(row[1], rule(row)) for row in rows]
        assert [(e["step"]["path"], (e["kind"], e["source_label"])) for e in imported["evidence"]] == [
            (path, made) for path, made in decided if made is not None]
        not_offered = [e["step"]["path"] for e in imported["trace"]["not_offered"]]
        assert not_offered == [path for path, made in decided if made is None] + skipped
        answers = [row[2] for row in rows if row[0] == "final_answer"]
        assert imported.get("output") == (answers[-1] if answers else None)
    agrees()
