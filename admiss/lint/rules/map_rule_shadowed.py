"""A MAP rule that an earlier rule always matches first.

## What it does
Flags a WHEN rule when an earlier rule for the same kind of step matches every step it
would: a tool pattern at least as wide, every outcome it takes, and no WHERE or path that
could make the earlier rule pass the step on.

## Why it matters
The first matching rule decides a step, so the later rule never applies. When the later
rule was the careful one (a failed call as `flawed_tool_call`), the earlier, wider rule
silently decides those steps instead, often as trusted evidence.

## Example
```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL "cancel_*" AS procedurally_sound_tool_call
  WHEN TOOL "cancel_booking" OUTCOME failed AS flawed_tool_call
}
```

## How to fix it
Put the narrower rule first, or narrow the earlier one:

```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL "cancel_booking" OUTCOME failed AS flawed_tool_call
  WHEN TOOL "cancel_*" AS procedurally_sound_tool_call
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, always_applies, map_rules, outcomes_of
from admiss.traces.mapping import name_pattern


def _covers(wide: ir.Ref | None, narrow: ir.Ref | None) -> bool:
    """Whether every tool name the pattern ``narrow`` matches, ``wide`` matches too."""
    if wide is None or wide.value == "*":
        return True
    if narrow is None:
        return False
    if wide.value == narrow.value:
        return True
    if "*" in narrow.value:
        return False
    return name_pattern(wide.value).fullmatch(narrow.value) is not None


def _shadows(earlier: ir.MapRule, later: ir.MapRule) -> bool:
    return (earlier.step == later.step and always_applies(earlier) and _covers(earlier.tool, later.tool)
            and outcomes_of(later) <= outcomes_of(earlier))


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    rules = list(map_rules(rubric))
    for index, later in enumerate(rules):
        earlier = next((rule for rule in rules[:index] if _shadows(rule, later)), None)
        if earlier is not None:
            yield Finding(later.span, f"this rule never applies: the rule on line {earlier.span.line} "
                                      "matches every step it would, first",
                          hint="move the narrower rule above the wider one, or delete it")
