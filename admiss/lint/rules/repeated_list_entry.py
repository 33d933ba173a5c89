"""A kind or shortcut label listed twice in one property.

## What it does
Flags a kind that a property ADMITs twice or FORBIDs twice, and a shortcut label it
rejects twice, across all of its statements. The second listing is reported.

## Why it matters
A repeat changes nothing by itself, which is the problem: it is almost always a copy
and paste where another entry was meant, such as a second shortcut label that was
edited into a copy of the first and then not changed. The lookalike the author had in
mind is then not rejected, or the kind meant to be forbidden is not named.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "8-K press-release exhibit"
}
```

## How to fix it
Remove the repeat, or write the entry that was meant:

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding


def _repeats(refs: tuple[ir.Ref, ...]) -> Iterator[tuple[ir.Ref, ir.Ref]]:
    """(repeat, first listing) for each entry already listed."""
    first: dict[str, ir.Ref] = {}
    for ref in refs:
        if ref.value in first:
            yield ref, first[ref.value]
        else:
            first[ref.value] = ref


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        for what, refs in (("ADMITs", prop.admit), ("FORBIDs", prop.forbid), ("rejects shortcut", prop.shortcuts)):
            for repeat, first in _repeats(refs):
                shown = f'"{repeat.value}"' if refs is prop.shortcuts else f"'{repeat.value}'"
                yield Finding(repeat.span,
                              f"property '{prop.name}' {what} {shown} twice (first on line {first.span.line})",
                              hint="remove the repeat, or write the entry that was meant")
