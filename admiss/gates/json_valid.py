"""``json_valid``: fails when the output does not parse as JSON.

A candidate with tool calls passes when every call's arguments parse as JSON, and its
text too when it has any.
"""

from __future__ import annotations

import json
from typing import Any

from admiss import ir
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult


class NotJSON(ValueError):
    """The output is missing or is not JSON; the message is a reason fit for a report."""


def parse_output(output: str | None) -> Any:
    """The output as a JSON value; raises NotJSON saying where parsing stopped."""
    if output is None:
        raise NotJSON("no output")
    try:
        return json.loads(output, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise NotJSON(f"output is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise NotJSON("output is not JSON admiss can read: nested too deeply") from None


def _no_constants(name: str) -> Any:
    # Python's json reads NaN and Infinity; JSON (RFC 8259) has no such values.
    raise NotJSON(f"output is not JSON: {name} is not a JSON value")


def check(candidate: Candidate) -> GateResult:
    try:
        if not candidate.tool_calls or candidate.output:
            parse_output(candidate.output)
        for call in candidate.tool_calls:
            call_arguments(call)
    except NotJSON as exc:
        return GateResult(FAIL, reason=str(exc))
    return GateResult(PASS)


def call_arguments(call: dict) -> Any:
    """A proposed tool call's arguments as a JSON value; NotJSON naming the call otherwise."""
    try:
        return parse_output(call["function"]["arguments"])
    except NotJSON as exc:
        raise NotJSON(f"tool call {call['id']} ({call['function']['name']}): arguments: {exc}") from None


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    return GateCheck(kind=gate.kind, cheap=True, run=check)
