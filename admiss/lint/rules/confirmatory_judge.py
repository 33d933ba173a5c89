"""A confirmatory judge RUBRIC: it asks for approval, not for what could fail.

## What it does
Flags a judge gate whose `RUBRIC` asks for approval ("approve", "APPROVE", "LGTM",
"sign off"), for constructive feedback or suggestions, or asks a yes/no confirmation
question ("Is the answer correct?", "Is this acceptable?", "Does it meet the
requirements?").

## Why it matters
A critic with a confirmatory prompt is adversarial in name only. Asked whether an
answer is right, or for feedback and then approval, a model looks for reasons to agree
and usually finds them; improving an answer is not the same as trying to disprove it.
A judge earns its cost when it has to search for the failure first: list the claims,
find the one without support, and score zero if there is one.

## Example
```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "Is the answer correct and complete? Give constructive feedback, then APPROVE."
      ON ABSTAIN fail_closed
  }
}
```

## How to fix it
Turn the question into a failure search with a rule for the score:

```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "List each claim. Which claim is not stated by a cited source, or is contradicted by one? Score 0 if any."
      ON ABSTAIN fail_closed
  }
}
```
"""

from __future__ import annotations

import re
from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, judge_questions

_VERDICT_WORDS = r"correct|right|good|accurate|ok|okay|acceptable|valid|complete|fine|satisfactory|sufficient"
_CONFIRMATORY = re.compile(
    "|".join([
        r"\bapprov(?:e|es|ed|al)\b",
        r"\bLGTM\b",
        r"\bsign[- ]off\b",
        r"\bconstructive (?:feedback|criticism)\b",
        r"\b(?:give|provide|offer) (?:\w+ )?(?:feedback|suggestions)\b",
        r"\bsuggest (?:\w+ )?improvements\b",
        # A yes/no question about the answer's quality invites a yes.
        rf"\b(?:is|are) (?:this|it|the \w+)\b[^?.]*?\b(?:{_VERDICT_WORDS})\b",
        r"\bdoes (?:this|it|the \w+) (?:meet|satisfy|fulfil|fulfill|address)\b",
    ]),
    re.IGNORECASE,
)


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for gate, question in judge_questions(rubric):
        match = _CONFIRMATORY.search(question)
        if match:
            yield Finding(gate.value_span_of("rubric"),
                          f"judge RUBRIC is confirmatory ({match.group(0)!r}): it asks for approval, "
                          "not for what could fail",
                          hint="make the judge search for the failure: which claim is unsupported or "
                               "contradicted? score 0 if any")
