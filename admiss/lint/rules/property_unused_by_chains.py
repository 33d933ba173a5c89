"""A property that no gate uses, in a file that has chains.

## What it does
In a rubric with at least one CHAIN, flags a PROPERTY that no `admissibility` gate
names. A `GATE admissibility` with no names uses every property, so then none is
flagged.

## Why it matters
A chain decides what is served. A property that no admissibility gate checks is still
shown in `admiss check` reports, so it looks enforced, but no rung waits for its
evidence: the candidate is served whether or not the property holds. Usually a name
was left off a gate's list when the property was added.

## Example
```rubric
PROPERTY refund_issued {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "refund email draft"
}

PROPERTY amount_matches {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "invoice PDF"
}

CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE admissibility refund_issued
}
```

## How to fix it
Name it on a gate (or write `GATE admissibility` with no names to require every
property):

```rubric
PROPERTY refund_issued {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "refund email draft"
}

PROPERTY amount_matches {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "invoice PDF"
}

CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE admissibility refund_issued, amount_matches
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in, keyword_span


def _used(rubric: ir.Rubric) -> set[str] | None:
    """Names the admissibility gates check, or None when one checks every property."""
    used: set[str] = set()
    for _, gate in gates_in(rubric):
        if gate.kind == "admissibility":
            if not gate.properties:
                return None
            used.update(ref.value for ref in gate.properties)
    return used


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    used = _used(rubric) if rubric.chains else None
    if used is None:
        return
    for prop in rubric.properties:
        if prop.name not in used:
            yield Finding(keyword_span(prop.span, "PROPERTY"),
                          f"property '{prop.name}' is checked by no gate: the chains serve without it",
                          hint=f"add it to an admissibility gate: GATE admissibility {prop.name}")
