"""A MAP rule maps steps onto a kind that no property admits or forbids.

## What it does
Flags a WHEN rule whose kind no property it is offered to names in ADMIT or FORBID.

## Why it matters
Every step the rule maps becomes evidence that each property excludes as merely
inadmissible: the rule does nothing but it reads as if it did. It is usually a kind left
over from an edit, or a rule meant for a property that ADMITs a different kind.

## Example
```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL "cancel_booking" OUTCOME ok AS verified_external_source
}
```

## How to fix it
Map the steps onto the kind the property weighs:

```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN TOOL "cancel_booking" OUTCOME ok AS procedurally_sound_tool_call
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, map_rules, offered_to


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for rule in map_rules(rubric):
        if rule.kind is None:
            continue
        named = {ref.value for prop in offered_to(rubric, rule) for ref in prop.admit + prop.forbid}
        if rule.kind.value not in named:
            yield Finding(rule.kind.span, f"no property admits or forbids '{rule.kind.value}': "
                                          "what this rule maps is never weighed",
                          hint="map onto a kind a property ADMITs, or name the kind in the property")
