"""A property with no admissible kind: no evidence can ever support it.

## What it does
Flags a PROPERTY that ADMITs no kind, or whose every ADMITted kind is also FORBIDden.

## Why it matters
Every evidence item offered to such a property is excluded, so its verdict is always
its default: with `DEFAULT no` the rubric fails every bundle however good the evidence,
and people learn to ignore it; with `DEFAULT yes` it passes every bundle. Either way
the property checks nothing. It is usually an ADMIT line that was forgotten or moved.

## Example
```rubric
PROPERTY named_operator {
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```

## How to fix it
ADMIT the kinds that prove it:

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
from admiss.lint.rules import Finding, keyword_span


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        forbidden = {ref.value for ref in prop.forbid}
        if all(ref.value in forbidden for ref in prop.admit):
            yield Finding(keyword_span(prop.span, "PROPERTY"),
                          f"property '{prop.name}' admits no kind: no evidence can ever support it",
                          hint="ADMIT the kinds that prove it, such as ADMIT verified_external_source")
