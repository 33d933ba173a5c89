"""A MAP rule that makes every tool call admissible, failed ones included.

## What it does
Flags a `WHEN TOOL` rule for every tool (no name, or `"*"`) with no WHERE, that takes
failed calls (no OUTCOME, or one naming a failure) that no earlier rule has caught, and
maps them onto a kind some property admits.

## Why it matters
A call that errored, got no result or was sent arguments that do not parse then counts as
proof. An agent that claims "your booking is cancelled" after the cancel call failed
passes: exactly the leniency the Admissibility Gate exists to stop.

## Example
```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL AS procedurally_sound_tool_call
}
```

## How to fix it
Catch failed calls first, or admit only successful ones:

```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN TOOL AS procedurally_sound_tool_call
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import FAILED_OUTCOMES, Finding, always_applies, map_rules, offered_to, outcomes_of


def _admitted(rubric: ir.Rubric, rule: ir.MapRule) -> bool:
    kind = rule.kind.value
    return any(kind in {r.value for r in p.admit} - {r.value for r in p.forbid} for p in offered_to(rubric, rule))


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    caught: set[str] = set()  # failed outcomes an earlier rule for every tool has decided
    for rule in map_rules(rubric):
        if rule.step != "tool_call" or not always_applies(rule) or (rule.tool and rule.tool.value != "*"):
            continue
        reaching = outcomes_of(rule) & FAILED_OUTCOMES - caught
        if rule.kind is not None and reaching and _admitted(rubric, rule):
            yield Finding(rule.span, f"every tool call, failed ones included, becomes '{rule.kind.value}', "
                                     "which a property admits",
                          hint="add WHEN TOOL OUTCOME failed AS flawed_tool_call above it, or write OUTCOME ok")
        caught |= outcomes_of(rule)
