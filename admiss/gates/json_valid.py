"""``json_valid``: fails when the output does not parse as JSON, or is JSON no reader should trust.

The output is read by admiss.jsonio.loads_untrusted: besides text that is not JSON (and
NaN or Infinity, which JSON does not have), it refuses an integer longer than Python's
int-conversion limit, a number beyond a double's range, nesting too deep to read and a key
repeated in one object. Each fails the gate with the reason, as the candidate's doing: no
output can make this gate raise, so none counts against its error budget.

A candidate with tool calls passes when every call's arguments pass these rules, and its
text too when it has any.
"""

from __future__ import annotations

from typing import Any

from admiss import ir
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult
from admiss.jsonio import UnreadableJSON, loads_untrusted


class NotJSON(ValueError):
    """The output is missing or is not JSON admiss accepts; the message is a reason fit for a report."""


def parse_output(output: str | None) -> Any:
    """The output as a JSON value; raises NotJSON saying what is wrong with it."""
    if output is None:
        raise NotJSON("no output")
    try:
        return loads_untrusted(output)
    except UnreadableJSON as exc:
        what = "output is JSON admiss refuses" if exc.well_formed else "output is not JSON"
        raise NotJSON(f"{what}: {exc}") from None


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
