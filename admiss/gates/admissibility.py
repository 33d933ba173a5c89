"""admissibility: the named properties (all when none are named) must be yes on the candidate's evidence.

A candidate that only proposes tool calls (no text) makes no claim to prove: it passes,
saying so. Its calls are actions, gated by the tool gates, and never evidence: the claim
that follows them is checked once their results are in the conversation.
"""

from __future__ import annotations

from admiss import ir
from admiss.compiler import offered_rows
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    names = [ref.value for ref in gate.properties] or list(ctx.properties)
    properties = [ctx.properties[name] for name in names]

    def run(candidate: Candidate) -> GateResult:
        if candidate.tool_calls and not (candidate.output or "").strip():
            return GateResult(PASS, reason=f"no claim to prove: the candidate only proposes "
                              f"{len(candidate.tool_calls)} tool call(s), which are never evidence")
        # One pass over the evidence per property (rows_of, then offered, made two lists of it).
        results = [p.check(offered_rows(candidate.evidence, p.name)) for p in properties]
        missing = [r.prop.name for r in results if r.verdict == "no"]
        verdict = FAIL if missing else PASS
        reason = f"no admissible evidence for: {', '.join(missing)}" if missing else \
            f"admissible evidence supports {len(results)} propert{'y' if len(results) == 1 else 'ies'}"
        # The evidence goes with the results, so a report can give each excluded item's index.
        return GateResult(verdict, reason=reason, details={"properties": results, "evidence": candidate.evidence})

    return GateCheck(kind="admissibility", cheap=True, run=run)
