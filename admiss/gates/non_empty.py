"""``non_empty``: the floor. Fails on a missing, empty or whitespace-only output; a
candidate that proposes tool calls is not empty (its calls are its answer)."""

from __future__ import annotations

from admiss import ir
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult


def check(candidate: Candidate) -> GateResult:
    output = candidate.output
    if candidate.tool_calls and not (output or "").strip():
        return GateResult(PASS, reason=f"no text, {len(candidate.tool_calls)} tool call(s)")
    if output is None:
        return GateResult(FAIL, reason="no output")
    if not output:
        return GateResult(FAIL, reason="output is empty")
    if not output.strip():
        return GateResult(FAIL, reason="output is only whitespace")
    return GateResult(PASS)


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    return GateCheck(kind=gate.kind, cheap=True, run=check)
