"""Completion: what the grammar accepts at the cursor, by the parser's own tables.

The text before the word being typed is fed to the LALR parser (``parser.expected_after``);
the terminals it accepts next give the keywords, and a NAME is filled by what the keywords
before it say it names: a kind after ADMIT, FORBID or AS, a gate kind after GATE, a property
after an admissibility gate or FOR, a policy after ON ABSTAIN. Gate options are offered only
when the gate's kind takes them.
"""

from __future__ import annotations

import re

import attrs

from admiss import ir
from admiss.analyze import gate_options
from admiss.lsp import words
from admiss.parser import Token, expected_after

KEYWORD, KIND, PROPERTY, GATE, VALUE = "keyword", "kind", "property", "gate", "value"

_WORD_BEFORE = re.compile(r"[A-Za-z0-9_]*\Z")
# Keyword pairs the grammar always writes together, offered as one item.
_PAIRS = {"ON": "ON ABSTAIN", "REJECT": "REJECT SHORTCUT", "MEANING": "MEANING MODEL"}
_OPTION_OF = {keyword.split()[0]: option for option, keyword in ir.OPTION_KEYWORDS.items() if option != "properties"}
_OPTION_OF["BUDGET"] = "budget_rate"


@attrs.frozen
class Item:
    label: str
    what: str
    detail: str = ""


@attrs.frozen
class Names:
    """The names a rubric defines, for completing references to them."""

    kinds: tuple[str, ...] = ir.BUILTIN_KINDS
    properties: tuple[str, ...] = ()

    @classmethod
    def of(cls, rubric: ir.Rubric | None) -> "Names":
        if rubric is None:
            return cls()
        return cls(rubric.known_kinds, tuple(p.name for p in rubric.properties))


def completions(text: str, offset: int, names: Names, start: int = 0) -> list[Item]:
    """What may be written at ``offset`` of ``text`` (code points); ``start`` is an offset
    between two top-level items at or before it, where the parse may begin."""
    word_start = offset - len(_WORD_BEFORE.search(text, 0, offset).group())
    before = text[start:word_start]
    found = expected_after(before)
    if found is None:
        return []
    tokens, accepted = found
    end = tokens[-1].end_pos if tokens else 0
    if before[end:].strip():  # in a comment, or after a stray character
        return []
    kind, given = _gate_so_far(tokens)
    items = [_keyword(t) for t in sorted(accepted) if _is_keyword(t) and t not in given and _fits(t, kind)]
    if "NAME" in accepted:
        items += _names_for(tokens, names)
    return items


def _is_keyword(terminal: str) -> bool:
    return terminal.lstrip("_") in words.KEYWORDS


def _keyword(terminal: str) -> Item:
    word = terminal.lstrip("_")
    label = _PAIRS.get(word, word)
    return Item(label, KEYWORD, words.KEYWORDS[word].split(":")[0].strip("`"))


def _gate_so_far(tokens: list[Token]) -> tuple[str | None, set[str]]:
    """The kind of the gate whose options the cursor is among, if it is among one's, and the
    option keywords that gate has already (each may be given once: E115)."""
    for index in range(len(tokens) - 1, -1, -1):
        if tokens[index].type in ("RBRACE", "LBRACE", "_RUNG"):
            break
        if tokens[index].type == "_GATE":
            kind = str(tokens[index + 1]) if index + 1 < len(tokens) else None
            return kind, {t.type for t in tokens[index + 1:] if t.type.lstrip("_") in _OPTION_OF}
    return None, set()


def _fits(terminal: str, kind: str | None) -> bool:
    """Gate options only for a gate whose kind takes them (any gate option while it is unknown)."""
    option = _OPTION_OF.get(terminal.lstrip("_"))
    if option is None or kind is None or kind not in ir.GATE_KINDS:
        return True
    return option in gate_options(kind)[0]


def _names_for(tokens: list[Token], names: Names) -> list[Item]:
    """The names that fit where the parser wants a NAME, by the keyword that governs it."""
    governing = next((t for t in reversed(tokens) if t.type not in ("NAME", "COMMA")), None)
    last = tokens[-1] if tokens else None
    if governing is None:
        return []
    kind = governing.type
    if kind in ("ADMIT", "_FORBID", "_AS"):
        return [Item(k, KIND, words.KIND_MEANINGS.get(k, "declared by KINDS")) for k in names.kinds]
    if kind == "_GATE" and last is governing:
        return [Item(k, GATE, words.gate_doc(k).split("\n")[0][:80]) for k in ir.GATE_KINDS]
    if kind == "_GATE" and _names_after(tokens, governing)[0] == "admissibility" or kind == "_FOR":
        return [Item(p, PROPERTY, "property") for p in names.properties]
    if kind == "_ABSTAIN":
        return [Item(p, VALUE, text) for p, text in words.POLICIES.items()]
    if kind == "_DEFAULT":
        return [Item(v, VALUE, text) for v, text in words.DEFAULTS.items()]
    if kind == "_OUTCOME":
        return [Item(v, VALUE, text) for v, text in words.OUTCOMES.items()]
    return []


def _names_after(tokens: list[Token], keyword: Token) -> list[str]:
    index = max(i for i, t in enumerate(tokens) if t is keyword)
    return [str(t) for t in tokens[index + 1:] if t.type == "NAME"] or [""]
