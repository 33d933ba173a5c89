"""A rubric with no properties and no chains: it passes every bundle.

## What it does
Flags a rubric file that defines no PROPERTY and no CHAIN.

## Why it matters
The aggregate verdict is `pass` when every property is `yes`, and with no properties
that holds vacuously: every bundle passes, whatever evidence it offers or lacks. A
rubric that checks nothing reads as a verification step in a pipeline while approving
everything, which is accept-if-plausible in its purest form. It is usually a file whose
content was lost, or a stub that was never finished.

## Example
```rubric
RUBRIC sec_filings "Operator claims must rest on SEC periodic filings"
KINDS filing_excerpt
```

## How to fix it
Say what must be proven:

```rubric
RUBRIC sec_filings "Operator claims must rest on SEC periodic filings"
KINDS filing_excerpt

PROPERTY named_operator {
  ADMIT filing_excerpt
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding
from admiss.source import Span


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    if not rubric.properties and not rubric.chains:
        yield Finding(Span.point(max(rubric.span.line, 1), max(rubric.span.column, 1)),
                      f"rubric '{rubric.name}' has no properties and no chains: every bundle passes",
                      hint="add a PROPERTY that says what evidence must prove")
