"""A property that says `DEFAULT yes`: accept-if-plausible.

## What it does
Flags `DEFAULT yes` in a PROPERTY.

## Why it matters
The default is the verdict a property gets when no admissible evidence supports it.
With `DEFAULT yes`, a bundle that offers nothing at all, or only final answers and
reasoning traces, passes the property: the verifier accepts unless something stops it.
The Admissibility Gate inverts exactly this default. Missing evidence must fail the
property, not defer the decision.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
  DEFAULT yes
}
```

## How to fix it
Write `DEFAULT no`, or leave `DEFAULT` out (no is the default):

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
  DEFAULT no
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        if prop.default.value == "yes":
            yield Finding(prop.default.span,
                          f"property '{prop.name}' says DEFAULT yes: it passes when no evidence supports it",
                          hint="write DEFAULT no (or leave DEFAULT out): missing evidence must fail")
