"""A rung that can serve without a property another rung of its chain gates.

## What it does
In a CHAIN of several rungs, flags each RUNG whose admissibility gates leave out a
property that an admissibility gate on another rung of the same chain checks. A
`GATE admissibility` with no names checks every property.

## Why it matters
Any rung whose gates pass serves its candidate. If the strong rung insists on a
property and the draft rung does not, a draft answer without that evidence is served
before the strong rung is ever asked: the property holds only for the answers that
happened to escalate. Usually the gate was added to one rung and forgotten on the others.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "news article"
}

CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE admissibility named_operator
  }
}
```

## How to fix it
Gate the property on every rung that can serve:

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "news article"
}

MAP {
  WHEN TOOL "fetch_filing" OUTCOME ok AS verified_external_source LABEL "10-K filing"
}

CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE admissibility named_operator
  }
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE admissibility named_operator
  }
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, keyword_span


def _gated(rung: ir.Rung, every: tuple[str, ...]) -> tuple[str, ...]:
    """The properties the rung's admissibility gates check, in rubric order."""
    named: set[str] = set()
    for gate in rung.gates:
        if gate.kind == "admissibility":
            if not gate.properties:
                return every
            named.update(ref.value for ref in gate.properties)
    return tuple(name for name in every if name in named)


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    every = tuple(p.name for p in rubric.properties)
    for chain in rubric.chains:
        gated = {rung.name: _gated(rung, every) for rung in chain.rungs}
        for rung in chain.rungs:
            for other in chain.rungs:
                missing = [name for name in gated[other.name] if name not in gated[rung.name]]
                if other is rung or not missing:
                    continue
                yield Finding(keyword_span(rung.span, "RUNG"),
                              f"rung '{rung.name}' can serve without property '{missing[0]}', "
                              f"which rung '{other.name}' gates",
                              hint=f"add GATE admissibility {', '.join(missing)} to rung '{rung.name}'")
                break
