"""An untrusted kind that a property neither forbids nor admits.

## What it does
Flags a PROPERTY that leaves any of `final_answer`, `reasoning_trace`, `summary`,
`interpretation` and `flawed_tool_call` out of both its ADMIT and its FORBID lists.

## Why it matters
An unnamed untrusted kind is still excluded (as `inadmissible`), but only by accident
of the current ADMIT list: the report's `forbidden:` line does not show it, a reader
cannot tell whether the author thought about it, and a later ADMIT that widens the
property lets it in. FORBID overrides ADMIT, so naming forbidden evidence explicitly
keeps the property shut whatever else changes.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace
  REJECT SHORTCUT "8-K press-release exhibit"
}
```

## How to fix it
FORBID all five:

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
        named = {ref.value for ref in prop.admit + prop.forbid}
        missing = [kind for kind in ir.UNTRUSTED_KINDS if kind not in named]
        if missing:
            listed = ", ".join(missing)
            yield Finding(keyword_span(prop.span, "PROPERTY"),
                          f"property '{prop.name}' does not FORBID untrusted kind{'s' if len(missing) > 1 else ''} "
                          f"{listed}",
                          hint=f"add FORBID {listed}")
