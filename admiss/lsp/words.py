"""What hover says of the language's words: evidence kinds, keywords, ON ABSTAIN policies.

The built-in kinds' meanings are the table of docs/language.md (KINDS); a test keeps the two
the same. Gates are described by their own modules' docstrings (admiss/gates/<kind>.py).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from importlib import resources

from admiss import ir
from admiss.lint.codes import DOCS_URL

KIND_MEANINGS = {
    "procedurally_sound_tool_call": "a tool call made correctly",
    "verified_external_source": "a source checked outside the agent",
    "final_answer": "the agent's answer itself",
    "reasoning_trace": "the agent's reasoning",
    "summary": "a summary",
    "interpretation": "an interpretation",
    "flawed_tool_call": "a tool call known to be flawed",
}

UNTRUSTED_NOTE = ("untrusted: what the agent says of its own work; admiss lint wants every property to "
                  "FORBID it (ADM005) and none to ADMIT it (ADM002)")

POLICIES = {
    "fail_open": "an abstain counts as pass (the default): for a gate that cannot run, never for a "
                 "candidate that stopped it",
    "fail_closed": "an abstain counts as fail: a gate that cannot tell stops the candidate",
}

DEFAULTS = {"no": "missing evidence fails the property (the default)",
            "yes": "the property passes when no evidence supports it (admiss lint: ADM001)"}

OUTCOMES = {
    "ok": "the tool call returned a result",
    "failed": "error, no_result or bad_args",
    "error": "the tool returned an error",
    "no_result": "the call has no result in the trace",
    "bad_args": "the arguments were not valid JSON for the tool",
}

# The keywords, as the grammar spells them, and one line on each (docs/language.md says more).
KEYWORDS = {
    "RUBRIC": "`RUBRIC name \"title\"`: the rubric's name and title; in a judge gate, the question the judge answers",
    "KINDS": "`KINDS a, b`: declares evidence kinds beyond the seven built in",
    "PROPERTY": "`PROPERTY name \"title\" { ... }`: what counts as proof of one claim",
    "ADMIT": "`ADMIT kind, ...`: the kinds that can support the property",
    "FORBID": "`FORBID kind, ...`: kinds that never can; FORBID wins over ADMIT",
    "REJECT": "`REJECT SHORTCUT \"label\", ...`: source labels refused even when the kind is admitted",
    "SHORTCUT": "`REJECT SHORTCUT \"label\", ...`: source labels refused even when the kind is admitted",
    "DEFAULT": "`DEFAULT no | yes`: the verdict when nothing is admitted (no when left out)",
    "CHAIN": "`CHAIN name { ... }`: a cascade of rungs, each a conjunction of gates",
    "RUNG": "`RUNG name MODEL \"model\" { GATE ... }`: one model's candidate and the gates it must pass",
    "MODEL": "`MODEL \"provider/name\"`: the rung's model, or the model a judge gate asks",
    "GATE": "`GATE kind [property, ...] option...`: one check of the candidate: pass, fail or abstain",
    "ON": "`ON ABSTAIN fail_open | fail_closed`: what an abstain counts as",
    "ABSTAIN": "`ON ABSTAIN fail_open | fail_closed`: what an abstain counts as",
    "FILE": "`FILE \"x.schema.json\"`: a schema gate's JSON Schema, beside the rubric",
    "CMD": "`CMD [\"prog\", \"arg\"]`: a subprocess gate's program; candidate on stdin, verdict on stdout",
    "TIMEOUT": "`TIMEOUT 5s`: how long a subprocess gate may run before it abstains",
    "THRESHOLD": "`THRESHOLD 0.7`: the score a judge or consistency gate needs, in [0, 1]",
    "K": "`K 5`: how many samples a consistency gate compares",
    "BUDGET": "`BUDGET rate WINDOW n`: the error rate over the last n runs that disables the gate",
    "WINDOW": "`BUDGET rate WINDOW n`: the error rate over the last n runs that disables the gate",
    "MEANING": "`MEANING MODEL \"provider/name\"`: the model that decides whether two answers mean the same",
    "TOOL": "`TOOL \"name\", ...`: on a gate, the tools it is about; in MAP, `WHEN TOOL [\"pattern\"]` picks tool calls",
    "MAP": "`MAP { WHEN ... }`: how the steps of an agent trace become evidence items",
    "WHEN": "`WHEN FINAL | TEXT | REASONING | TOOL [\"pattern\"] ...`: one MAP rule; the first that matches decides",
    "FINAL": "`WHEN FINAL`: the agent's final answer",
    "TEXT": "`WHEN TEXT`: assistant text that is not the final answer",
    "REASONING": "`WHEN REASONING`: the agent's reasoning steps",
    "OUTCOME": "`OUTCOME ok, failed, ...`: the tool-call outcomes a rule matches",
    "WHERE": "`WHERE args.x == value` or `WHERE path MATCHES \"pattern\"`: a field of the tool call's arguments or result",
    "MATCHES": "`WHERE path MATCHES \"pattern\"`: the field matches a `*` glob, whole",
    "SKIP": "`SKIP`: the matched step becomes no evidence",
    "AS": "`AS kind`: the evidence kind the matched step becomes",
    "LABEL": "`LABEL \"text\" | path`: the evidence item's source_label",
    "DETAIL": "`DETAIL \"text\" | path`: the evidence item's detail",
    "FOR": "`FOR property`: offer the item to that property only",
}


@lru_cache(maxsize=None)
def gate_doc(kind: str) -> str:
    """The docstring of the gate kind's module, admiss/gates/<kind>.py, read without importing it."""
    if kind not in ir.GATE_KINDS:
        return ""
    source = (resources.files("admiss.gates") / f"{kind}.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def docs_link(page: str) -> str:
    """The address of a docs page (``lint/ADM004.md``, ``gates.md``) where docs/ is published."""
    return DOCS_URL + page
