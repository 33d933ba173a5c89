"""Hover text (Markdown): what an evidence kind means, a property's rules, a gate's docs."""

from __future__ import annotations

import json
import re

from admiss import ir
from admiss.analyze import gate_options
from admiss.lsp import symbols, words
from admiss.lsp.symbols import Occurrence

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def hover_text(rubric: ir.Rubric | None, found: list[Occurrence], line_text: str, line: int,
               column: int, last: ir.Rubric | None = None) -> str | None:
    """What to show for the word at ``line``:``column`` (1-based), or None for nothing.

    In a text that does not parse (``rubric`` None), a name is looked up by its spelling in
    ``last``, the IR of the last text that did.
    """
    occurrence = symbols.at(found, line, column)
    if rubric is not None and occurrence is not None:
        return _TEXTS[occurrence.what](rubric, occurrence.name)
    word = word_at(line_text, column)
    if word in words.KEYWORDS:
        return f"**{word}**: {words.KEYWORDS[word]}"
    what = _spelled(last, word) if rubric is None and last is not None and word else None
    return _TEXTS[what](last, word) if what else None


def _spelled(rubric: ir.Rubric, word: str) -> str | None:
    """What ``word`` names in ``rubric``, by its spelling alone."""
    if word in rubric.known_kinds:
        return symbols.KIND
    if any(p.name == word for p in rubric.properties):
        return symbols.PROPERTY
    if word in ir.GATE_KINDS:
        return symbols.GATE
    return symbols.POLICY if word in words.POLICIES else None


def word_at(line_text: str, column: int) -> str | None:
    """The identifier that ``column`` (1-based) stands in or just after, on one line of text."""
    for match in _WORD.finditer(line_text):
        if match.start() < column <= match.end() + 1:
            return match.group()
    return None


def _kind(rubric: ir.Rubric, name: str) -> str:
    declared = [ref for ref in rubric.kinds if ref.value == name]
    if name in words.KIND_MEANINGS:
        head = f"**evidence kind** `{name}` (built in): {words.KIND_MEANINGS[name]}"
        if name in ir.UNTRUSTED_KINDS:
            head += f"\n\n{words.UNTRUSTED_NOTE}"
    elif declared:
        head = f"**evidence kind** `{name}`, declared by KINDS on line {declared[0].span.line}"
    else:
        return f"`{name}` is not a known evidence kind (E101): declare it with KINDS, or fix the spelling"
    admitted = [p.name for p in rubric.properties if any(r.value == name for r in p.admit)]
    forbidden = [p.name for p in rubric.properties if any(r.value == name for r in p.forbid)]
    return head + _names("\n\nadmitted by", admitted) + _names("\n\nforbidden by", forbidden)


def _names(label: str, names: list[str]) -> str:
    return f"{label}: " + ", ".join(f"`{n}`" for n in names) if names else ""


def _property(rubric: ir.Rubric, name: str) -> str:
    found = [p for p in rubric.properties if p.name == name]
    if not found:
        return f"`{name}` is not a defined property (E105)"
    prop = found[0]
    rules = [f"ADMIT {', '.join(r.value for r in prop.admit)}" if prop.admit else "ADMIT nothing: the verdict "
             "is always the DEFAULT",
             f"FORBID {', '.join(r.value for r in prop.forbid)}" if prop.forbid else "FORBID nothing",
             "REJECT SHORTCUT " + ", ".join(ir_string(r.value) for r in prop.shortcuts) if prop.shortcuts
             else "REJECT SHORTCUT nothing", f"DEFAULT {prop.default.value}"]
    title = f" \"{prop.title}\"" if prop.title is not None else ""
    gated = [f"{chain.name}/{rung.name}" for chain in rubric.chains for rung in chain.rungs for gate in rung.gates
             if gate.kind == "admissibility" and any(r.value == name for r in gate.properties)]
    return (f"**property** `{prop.name}`{title} (line {prop.span.line})\n\n```rubric\n" + "\n".join(rules) +
            "\n```\n\nAn offered item is excluded when its kind is forbidden, then when it is not admitted, then "
            "when its source label is a rejected shortcut; the verdict is yes when an item is admitted, else "
            "the DEFAULT." + _names("\n\ngated by", gated))


def ir_string(value: str) -> str:
    """A string as the rubric would write it (JSON escapes)."""
    return json.dumps(value, ensure_ascii=False)


def _gate(rubric: ir.Rubric, name: str) -> str:
    doc = words.gate_doc(name)
    if not doc:
        return f"`{name}` is not a gate kind (E108): one of {', '.join(ir.GATE_KINDS)}"
    takes, required = gate_options(name)
    options = ", ".join(("**" + ir.OPTION_KEYWORDS[o] + "**" if o in required else ir.OPTION_KEYWORDS[o])
                        for o in sorted(takes) if o in ir.OPTION_KEYWORDS)
    return (f"**gate** `{name}`\n\n{doc}\n\noptions (required in bold): {options}\n\n"
            f"[gates.md]({words.docs_link('gates.md')})")


def _table(label: str, table: dict[str, str]):
    def text(rubric: ir.Rubric, name: str) -> str:
        return f"**{label}** `{name}`: {table.get(name, 'not one of ' + ', '.join(table))}"
    return text


_TEXTS = {
    symbols.KIND: _kind,
    symbols.PROPERTY: _property,
    symbols.GATE: _gate,
    symbols.POLICY: _table("ON ABSTAIN", words.POLICIES),
    symbols.DEFAULT: _table("DEFAULT", words.DEFAULTS),
    symbols.OUTCOME: _table("OUTCOME", words.OUTCOMES),
}
