"""``json_valid``: fails when the output does not parse as JSON, or is JSON no reader should trust.

The output is read by admiss.jsonio.loads_untrusted: besides text that is not JSON (and
NaN or Infinity, which JSON does not have), it refuses an integer longer than Python's
int-conversion limit, a number beyond a double's range, nesting too deep to read and a key
repeated in one object. Each fails the gate with the reason, as the candidate's doing: no
output can make this gate raise, so none counts against its error budget.
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
        parse_output(candidate.output)
    except NotJSON as exc:
        return GateResult(FAIL, reason=str(exc))
    return GateResult(PASS)


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    return GateCheck(kind=gate.kind, cheap=True, run=check)
