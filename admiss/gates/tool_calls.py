"""``tool_calls [TOOL "a", "b"]``: the tools a rung may call. Fails when the candidate
proposes a call to any tool not named (with no TOOL, to any tool at all); a candidate that
proposes no call passes. The names are exact: a rung's model is offered the client's
``tools``, and this gate is how the rubric, not the client, says which of them may be served.
"""

from __future__ import annotations

from admiss import ir
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    allowed = frozenset(gate.tools or ())

    def run(candidate: Candidate) -> GateResult:
        names = [call["function"]["name"] for call in candidate.tool_calls]
        refused = sorted({name for name in names if name not in allowed})
        if refused:
            scope = f"this rung may call only {', '.join(sorted(allowed))}" if allowed else "this rung may call no tool"
            return GateResult(FAIL, reason=f"proposes a call to {', '.join(refused)}: {scope}")
        return GateResult(PASS, reason=f"{len(names)} tool call(s), all allowed" if names else "no tool call")

    return GateCheck(kind=gate.kind, cheap=True, run=run)
