"""A MAP rule that makes the agent's final answer a kind other than `final_answer`.

## What it does
Flags `WHEN FINAL AS kind` when the kind is not `final_answer`.

## Why it matters
The final answer is the agent's own claim ("your booking is cancelled"): the thing the
rubric checks, never proof of itself. Mapped onto any other kind, a property that admits
that kind can pass on the agent's say-so, and properties that FORBID `final_answer` no
longer see it for what it is.

## Example
```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN FINAL AS summary
}
```

## How to fix it
Map the final answer onto `final_answer`:

```rubric
PROPERTY booking_cancelled {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}
MAP {
  WHEN FINAL AS final_answer
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, map_rules


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for rule in map_rules(rubric):
        if rule.step == "final_answer" and rule.kind is not None and rule.kind.value != "final_answer":
            yield Finding(rule.kind.span, f"the agent's final answer becomes '{rule.kind.value}': "
                                          "its own claim would count as other evidence",
                          hint="write WHEN FINAL AS final_answer")
