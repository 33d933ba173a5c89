"""A property with no REJECT SHORTCUT: the hidden shortcut.

## What it does
Flags a PROPERTY that has no `REJECT SHORTCUT` line.

## Why it matters
Admissible kinds are broad: `verified_external_source` covers a 10-K filing and an 8-K
press-release exhibit alike. An agent that cannot find the source the property needs
reaches for a lookalike that has the right kind and the wrong provenance, and a
property with no shortcut list admits it. Naming the lookalikes you know of makes the
rejection part of the rubric instead of the judge's taste, and shows it in every report
(`shortcut_rejections:`).

## Example
```rubric
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
}
```

## How to fix it
List the source labels that look like proof but are not:

```rubric
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, keyword_span


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        if not prop.shortcuts:
            yield Finding(keyword_span(prop.span, "PROPERTY"), f"property '{prop.name}' rejects no shortcuts",
                          hint='name the lookalike sources an agent might pass off as proof: '
                               'REJECT SHORTCUT "news article", ...')
