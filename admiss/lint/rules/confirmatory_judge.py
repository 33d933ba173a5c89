"""A confirmatory judge RUBRIC: it asks for approval, a rating or a confirmation, not for what could fail.

## What it does
Flags a judge gate whose `RUBRIC` never asks a failure-seeking question, or asks for a
verdict before it asks one. A failure-seeking question directs the judge to search for
what is wrong: what could fail, which claim is unsupported or contradicted, what evidence
is missing, list the errors, the ways the answer could be wrong, find a counterexample,
score 0 if any claim lacks a source. Texts that only ask for a rating ("Rate how good this
answer is from 0 to 1."), a confirmation ("Please check whether the summary is accurate.",
"Is this correct?", "Verify that it has no errors.") or approval and feedback ("Give
constructive feedback, then APPROVE.") are flagged.

The text is read clause by clause (split at `.`, `?`, `!`, `;`, `:` and "then"). A clause
seeks failure when it names a failure (error, mistake, flaw, gap, wrong, incorrect,
unsupported, missing, lacks, contradicts, not stated, no source, could fail, ...): a mis-
verb (mistranslated, miscounted), a step left undone (unanswered, unhandled), a broken
rule (violates), a difference (differs from), a defect (harmful, unnecessary, a
vulnerability), in a JSON key as well (`unsupported_claims`), or by ellipsis ("list each
claim that is not"). "Problem" and "issue" meaning the task ("whether the customer's
issue gets resolved") name no failure. The failure must not be asserted absent ("no
errors", "free of mistakes", "nothing is wrong", "is not wrong", "doesn't contain
anything wrong", "no required field is missing"), not one side of a verdict pair ("right
or wrong", "true or false", "approve or reject", `"pass" | "fail"`, "safe or unsafe"),
and not switched off ("do not look for errors", "ignore minor mistakes"). A clause asks for a verdict when it says approve, LGTM, sign
off, pass, rate, score, grade or "give a score"; a verdict clause that is itself a failure
rule ("score 0 if any claim is unsupported") seeks failure. Words such as "accurate" or
"correct" change nothing: "Is the summary accurate? Point out every sentence that is
wrong." seeks failure. The order is the order of the text: "Rate it. But first, find its
errors." is flagged, because the verdict is written first; write the search first.

This rule took over the earlier word list of confirmatory phrases, so one text gets one
finding from it. A tone instruction (ADM006) is a different fault and is reported
separately: "Be skeptical and rate it." gets both.

## Why it matters
A critic with a confirmatory prompt is adversarial in name only. Asked whether an
answer is right, or for a rating, or for feedback and then approval, a model looks for
reasons to agree and usually finds them; improving an answer is not the same as trying to
disprove it. A judge earns its cost when it has to search for the failure first: list the
claims, find the one without support, and score zero if there is one. The search has to
come before the verdict: a score already given is rarely taken back.

## Example
```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "Please check whether the summary is accurate, then rate it from 0 to 1."
      ON ABSTAIN fail_closed
  }
}
```

## How to fix it
Turn the question into a failure search, then a rule for the score:

```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "List each claim in the summary. Which claim is not stated by the source, or is contradicted by it? Score 0 if any."
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

# Where one request ends and the next begins; "then" orders two requests in one sentence.
_CLAUSE_BREAK = re.compile(r"[.?!;:\n]+|,?\s+(?:and\s+)?then\b|\s+(?:and\s+)?afterwards\b", re.IGNORECASE)

_FAILURE_NOUNS = (
    r"errors?|mistakes?|flaws?|defects?|bugs?|problems?|issues?|faults?|weak(?:ness(?:es)?|\s+points?|\s+spots?)"
    r"|gaps?|omissions?|inconsistenc(?:y|ies)|contradictions?|discrepanc(?:y|ies)|failures?|failure\s+modes?"
    r"|hallucinations?|inaccurac(?:y|ies)|counter-?examples?|loopholes?|falsehoods?|fabrications?|untruths?"
    r"|misstatements?|misquot(?:es?|ations?)|holes|red\s+flags?|shortcomings?|caveats?|objections?"
    r"|reasons?\s+to\s+(?:reject|doubt|fail)|risks?|pitfalls?|edge\s+cases?|blind\s+spots?|oversights?"
    r"|differences?|mismatch(?:es)?|violations?|breach(?:es)?|vulnerabilit(?:y|ies)|exploits?|injections?"
)
_FAILURE_WORDS = (
    r"wrong(?:ly)?|incorrect(?:ly)?|false|untrue|inaccurate(?:ly)?|invalid|erroneous|mistaken|mislead\w*|bogus"
    r"|unsupported|unsubstantiated|unsourced|uncited|unverified|unverifiable|unjustified|unfounded|unbacked"
    r"|unwarranted|ungrounded|baseless|dubious|questionable|suspicious|implausible|doubtful|fishy|off-base"
    r"|missing|miss(?:es|ed)?|lack(?:s|ing|ed)?|absent|omit(?:s|ted)?|left\s+out|overlook(?:s|ed)?|neglect(?:s|ed)?"
    r"|fabricat\w*|hallucinat\w*|invent(?:s|ed)|made[-\s]up|overclaim\w*|overstat\w*|exaggerat\w*|misrepresent\w*"
    r"|mis(?:stat|quot|read|interpret|attribut|translat|spell|label|calculat|count|classif|characteri[sz]|us"
    r"|appl|nam|cit|report|judg|understand|understood|identif|match|align|configur|format|order|typ|pars"
    r"|handl|sort|plac|lead)\w*"
    r"|un(?:answered|addressed|resolved|handled|tested|checked|validated|sanitized|sanitised|escaped|mentioned"
    r"|explained|stated|cited|sourced)"
    r"|violat\w*|breach\w*|infring\w*|contraven\w*|disobey\w*|differ(?:s|ed|ing)?|mismatch(?:ed|es|ing)?"
    r"|weak(?:er|est)?|vulnerable|insecure|unsafe|harmful|dangerous|toxic|offensive|unnecessary|redundant"
    r"|superfluous|irrelevant|off-topic|beyond\s+what"
    r"|contradict\w*|conflict(?:s|ing)?|inconsistent|disagree(?:s|ing)?|deviat\w*|diverg\w*"
    r"|fail(?:s|ed|ing)?|break(?:s|ing)?|broken|go(?:es)?\s+wrong|flawed|faulty|defective|buggy|incomplete"
    r"|refut\w*|disprov\w*|falsif\w*|debunk\w*|undermin\w*|poke\s+holes|argue\s+against|case\s+against"
    r"|reject(?:ed|ion)?|doubt|challenge|attack|nitpick|object(?:s|ed)?\s+to"
)
# "not" before what support or agreement would look like: "not stated", "doesn't match".
_NOT_SUPPORTED = (
    r"(?:\bnot\b|n't\b|\bnever\b)(?:\s+\w+){0,2}?\s+(?:support|stat|back|ground|sourc|cit|found|present"
    r"|true|correct|accurate|right|valid|justif|verif|match|follow|hold|agree|address|answer|cover|mention|includ"
    r"|consistent|entail|impl|substantiat|confirm|prov|shown|show|trace|attribut|work|pass"
    r"|satisf|meet|met\b|fulfil|compl|handl|appear|exist|reflect|rest)\w*"
    r"|(?:\bnot\b|n't\b|\bnever\b)(?:\s+(?:come|comes|taken|drawn|derived|quoted|copied))?\s+(?:in|from|by)\b"
)
# An answer left out by ellipsis at the end of a clause: "list each claim that is not".
_ELLIPTIC_NOT = (r"\b(?:that|which|those|ones?|where)\s+(?:is|are|was|were|do|does|did|has|have|had|can|could"
                 r"|would|will)\s*(?:not|n't)\b(?=\s*(?:[,)]|$))")
# An absence of support named as the failure: "no source", "without a citation".
_NO_SUPPORT = (
    r"\b(?:no|without(?:\s+an?|\s+any)?|lacking(?:\s+an?|\s+any)?|(?:not|n't)\s+(?:have|has|give|provide|include)"
    r"(?:\s+an?|\s+any)?)\s+(?:\w+\s+){0,2}?(?:source|citation|support|evidence"
    r"|passage|quote|reference|backing|basis|proof|justification|grounding|test|link|receipt|record)s?\b"
)
_FAILURE = re.compile(rf"\b(?:{_FAILURE_NOUNS}|{_FAILURE_WORDS})\b|{_NOT_SUPPORTED}|{_NO_SUPPORT}|{_ELLIPTIC_NOT}"
                      r"|\bcould\s+(?:be|go)\s+wrong\b", re.IGNORECASE)

# Two options of a verdict: "right or wrong", "pass" | "fail", correct/incorrect.
_OR = r"[\"']?\s*(?:\bor\b|/|\|)\s*[\"']?"
# A failure named only to say it is absent, or as one side of a verdict: not a search.
_ABSENT = re.compile(
    rf"\b(?:no|zero|free\s+(?:of|from)|without(?:\s+any)?|nothing(?:\s+\w+){{0,2}}|none\s+of\s+the|never)\s+"
    rf"(?:\w+\s+){{0,2}}?(?:{_FAILURE_NOUNS}|{_FAILURE_WORDS})\b"
    rf"|\b(?:{_FAILURE_NOUNS})-free\b"
    rf"|(?:\bnot|n't)\s+(?:\w+\s+)?(?:{_FAILURE_WORDS})\b"
    rf"|\b(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|is\s+not|isn't|are\s+not|aren't|has|have|contains?)"
    rf"\s+(?:\w+\s+){{0,2}}?(?:contain|have|include|make|show|with|free|no)\s+(?:any(?:thing)?\s+)?(?:\w+\s+){{0,2}}?"
    rf"(?:{_FAILURE_NOUNS}|{_FAILURE_WORDS})\b"
    rf"|\b(?:no|not\s+(?:a|one|any|a\s+single))\s+(?:\w+\s+){{0,3}}?(?:is|are|was|were|be|gets?|got|goes|went)\s+"
    rf"(?:\w+\s+)?(?:{_FAILURE_WORDS})\b"
    rf"|\b(?:right|correct|true|accurate|valid|good|pass|acceptable|fine|complete){_OR}(?:{_FAILURE_WORDS}|bad|not)\b"
    rf"|\b(?:approve|accept|pass|yes){_OR}(?:reject|fail|no)\b|\b(?:reject|fail|no){_OR}(?:approve|accept|pass|yes)\b"
    rf"|\b(?:{_FAILURE_WORDS}|bad){_OR}(?:right|correct|true|accurate|valid|good|complete|not)\b"
    rf"|\b(?P<quality>\w+){_OR}(?:un|in|im|ir|il|dis|non-?)(?P=quality)\b|\b(?:un|in|im|ir|il|dis|non-?)"
    rf"(?P<lack>\w+){_OR}(?P=lack)\b",
    re.IGNORECASE,
)
# A search that is switched off, up to the next "but"/"and"/comma: "don't look for errors",
# "ignore minor mistakes".
_SEARCH_VERBS = (r"look|search|hunt|find|list|identify|point|flag|mention|report|worry|focus|dwell|nitpick"
                 r"|enumerate|name|quote|probe|dig|try|penali[sz]e|count|deduct")
_SWITCHED_OFF = re.compile(
    r"(?:\b(?:do\s+not|don't|dont|no\s+need\s+to|need\s+not|needn't|never|without|avoid|instead\s+of|rather\s+than"
    rf"|not\s+necessary\s+to)\s+(?:\w+\s+){{0,2}}?(?:{_SEARCH_VERBS})\w*"
    r"|\b(?:ignore|ignoring|disregard|overlook|skip|set\s+aside|forgive|excuse|tolerate)\b)[^,]*?(?=,|\bbut\b|\band\b|$)",
    re.IGNORECASE,
)
# "problem" and "issue" as the task the answer is to solve, not a fault in it: "whether the
# customer's issue gets resolved", "solve the problem".
_TASK_SENSE = re.compile(
    r"\b(?:solv|resolv|address|handl|tackl)\w*\s+(?:[\w']+\s+){0,2}?(?:problem|issue)s?\b"
    r"|\b(?:the|this|that|their|his|her|its|\w+'s)\s+(?:[\w']+\s+)?(?:problem|issue)s?\s+(?:gets?|got|is|are|was|were"
    r"|has\s+been|have\s+been|being)\s+(?:\w+\s+)?(?:solved|resolved|addressed|handled|answered)\b",
    re.IGNORECASE,
)
# Names written as identifiers, as JSON keys often are: "unsupported_claims", "missingPoints".
_IDENTIFIER_JOIN = re.compile(r"_|(?<=[a-z])(?=[A-Z])")
# A request for a verdict: approval, a rating, a pass.
_VERDICT = re.compile(
    r"\bapprov(?:e|es|ed|al)\b|\bLGTM\b|\bsign[- ]?off\b|\bthumbs[- ]up\b|\bgive\s+(?:it\s+)?(?:a\s+|your\s+)?"
    r"(?:score|rating|grade|verdict|pass|mark)\b|\b(?:rate|score|grade|mark)\b|\brating\b"
    r"|\b(?:say|answer|respond|reply|output|return)\s+(?:with\s+)?[\"']?(?:yes|pass|ok|okay|true|approved?)\b"
    r"|\baccept\b|\bpass\s+it\b",
    re.IGNORECASE,
)
# A verdict that is asked not to be given: "don't rate the style".
_NO_VERDICT = re.compile(r"\b(?:do\s+not|don't|dont|never|no\s+need\s+to|need\s+not|without)\s+(?:\w+\s+){0,2}?"
                         r"(?:approv|rat|scor|grad|sign|accept|pass)\w*", re.IGNORECASE)
# A verdict that is itself a failure rule: "score 0 if any claim is unsupported".
_FAILURE_RULE = re.compile(r"\b(?:if|when|unless|where|whenever)\b|\bonly\s+if\b", re.IGNORECASE)
_REWRITE = ("List each claim in the answer. Which claim is not supported by the evidence, or is contradicted "
            "by it? What evidence is missing? Score 0 if any.")


def _seeks_failure(clause: str) -> bool:
    """Whether a clause directs the judge to search for a failure."""
    searched = _SWITCHED_OFF.sub(" ", _ABSENT.sub(" ", _TASK_SENSE.sub(" ", clause)))
    return _FAILURE.search(searched) is not None


def _asks_verdict(clause: str) -> bool:
    """Whether a clause asks for a verdict without a failure rule inside it."""
    return _VERDICT.search(_NO_VERDICT.sub(" ", clause)) is not None and not (_FAILURE_RULE.search(clause) and _seeks_failure(clause))


def verdict_before_search(question: str) -> tuple[bool, str | None]:
    """Whether the question asks a failure-seeking question, and the verdict clause that
    comes before the first one (None when no verdict is asked first)."""
    question = _IDENTIFIER_JOIN.sub(" ", question)
    for clause in (c.strip() for c in _CLAUSE_BREAK.split(question)):
        if _seeks_failure(clause):
            return True, None
        if _asks_verdict(clause):
            return any(_seeks_failure(c) for c in _CLAUSE_BREAK.split(question)), clause
    return False, None


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for gate, question in judge_questions(rubric):
        seeks, verdict = verdict_before_search(question)
        if seeks and verdict is None:
            continue
        if seeks:
            message = (f"judge RUBRIC asks for a verdict ({verdict!r}) before it asks what could fail")
        else:
            message = "judge RUBRIC only asks for a rating or a confirmation: it never asks what could fail"
        yield Finding(gate.value_span_of("rubric"), message,
                      hint=f"search for the failure first, then score: RUBRIC \"{_REWRITE}\"")
