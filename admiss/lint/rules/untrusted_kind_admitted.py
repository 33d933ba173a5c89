"""ADMIT names an untrusted evidence kind.

## What it does
Flags an ADMIT of `final_answer`, `reasoning_trace`, `summary`, `interpretation` or
`flawed_tool_call` that the same property does not also FORBID.

## Why it matters
These five kinds are the agent talking about its own work: its answer, its reasoning,
its summaries and interpretations, and tool calls that went wrong. Admitting one lets
the agent prove a property by saying it holds ("the final answer says the 10-K confirms
the operator"). Trusted evidence comes from procedurally sound tool calls, verified
external sources, or kinds you declare with `KINDS` for your own systems of record.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source, final_answer
  FORBID reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```

## How to fix it
Move the kind to FORBID:

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        forbidden = {ref.value for ref in prop.forbid}
        for ref in prop.admit:
            # A kind that is also forbidden is never admitted (FORBID wins); ADM003 says so.
            if ref.value in ir.UNTRUSTED_KINDS and ref.value not in forbidden:
                yield Finding(ref.span, f"property '{prop.name}' ADMITs untrusted kind '{ref.value}'",
                              hint=f"FORBID {ref.value}: the agent's own words never prove a property")
