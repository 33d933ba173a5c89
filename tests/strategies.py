"""Hypothesis strategies for random valid rubric sources and bundles.

Sources are rendered with random layout (spacing, line breaks after commas, comments) so
tests can check that layout never changes meaning.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from admiss.ir import BUILTIN_KINDS

KEYWORDS = {"RUBRIC", "KINDS", "PROPERTY", "ADMIT", "FORBID", "REJECT", "SHORTCUT", "DEFAULT", "CHAIN",
            "RUNG", "GATE", "MODEL", "ON", "ABSTAIN", "FILE", "CMD", "TIMEOUT", "THRESHOLD", "K", "BUDGET",
            "WINDOW", "MEANING", "MAP", "WHEN", "FINAL", "TEXT", "REASONING", "TOOL", "OUTCOME", "WHERE", "MATCHES", "SKIP", "AS",
            "LABEL", "DETAIL", "FOR"}
names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(lambda n: n.upper() not in KEYWORDS)
labels = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
custom_kinds = st.lists(names.filter(lambda n: n not in BUILTIN_KINDS), max_size=3, unique=True)
comments = st.sampled_from(["", "  # why", " #", "  # ADMIT summary { } \"x\""])
gaps = st.sampled_from([" ", "  ", "\n  ", " \n\t "])


def _string(value: str) -> str:
    return json.dumps(value)


@st.composite
def property_specs(draw, kinds: list[str]) -> dict:
    pick = st.lists(st.sampled_from(kinds), max_size=4)
    return {
        "name": draw(names),
        "title": draw(st.none() | labels),
        "admit": draw(st.lists(pick, max_size=2)),
        "forbid": draw(st.lists(pick, max_size=2)),
        "shortcuts": draw(st.lists(st.lists(labels, max_size=3), max_size=2)),
        "default": draw(st.sampled_from([None, "no", "yes"])),
    }


def _list(items: list[str], gap: str) -> str:
    return ("," + gap).join(items)


@st.composite
def rubric_sources(draw, chains: bool = False) -> tuple[str, dict]:
    """(source text, spec) for a random valid rubric with unique property names.

    With ``chains``, the rubric also has CHAIN blocks and may have a MAP block, and comment
    and blank lines stand between random lines (the spec describes neither).
    """
    extra = draw(custom_kinds)
    kinds = list(BUILTIN_KINDS) + extra
    specs = draw(st.lists(property_specs(kinds), min_size=1, max_size=4, unique_by=lambda p: p["name"]))
    out = []
    if draw(st.booleans()):
        out.append(f"RUBRIC {draw(names)} {_string(draw(labels))}{draw(comments)}")
    if extra:
        out.append(f"KINDS {_list(extra, draw(gaps))}{draw(comments)}")
    for spec in specs:
        out.append(_property_text(draw, spec))
    if chains:
        chain_names = draw(st.lists(names, min_size=1, max_size=2, unique=True))
        out += [_chain_text(draw, name, [p["name"] for p in specs]) for name in chain_names]
        if draw(st.booleans()):
            out.insert(draw(st.integers(0, len(out))), _mapping_text(draw, kinds, [p["name"] for p in specs]))
    text = "\n".join(out) + "\n"
    if chains:
        text = _with_lines_between(draw, text)
    return text, {"kinds": kinds, "properties": specs}


own_line_comments = st.sampled_from(["# own line", "  # indented", "#", "", "   ", "#  GATE judge { ] \"x"])


def _with_lines_between(draw, text: str) -> str:
    """``text`` with comment or blank lines inserted between random lines (never inside a string)."""
    lines = text.split("\n")
    out = []
    for line in lines:
        out += draw(st.lists(own_line_comments, max_size=2))
        out.append(line)
    return "\n".join(out)


_OPTIONS = {
    "non_empty": [],
    "json_valid": [],
    "schema": [st.just('FILE "answer.schema.json"')],
    "subprocess": [st.lists(labels.map(_string), min_size=1, max_size=3).map(lambda c: "CMD [" + ", ".join(c) + "]"),
                   st.sampled_from(["TIMEOUT 5s", "TIMEOUT 1.5m", "TIMEOUT 250ms", ""])],
    "judge": [st.sampled_from(['MODEL "openai/gpt-5"', 'MODEL "x"']), labels.map(lambda q: "RUBRIC " + _string(q)),
              st.sampled_from(["THRESHOLD 0.7", "THRESHOLD 1", ""])],
    "consistency": [st.sampled_from(["K 3", "K 5"]), st.sampled_from(["THRESHOLD 0.8", ""]),
                    st.sampled_from(['MEANING MODEL "openai/gpt-5-mini"', ""])],
}
_COMMON_OPTIONS = [st.sampled_from(["ON ABSTAIN fail_closed", "ON ABSTAIN fail_open", ""]),
                   st.sampled_from(["BUDGET 0.2 WINDOW 50", ""])]


def _gate_text(draw, property_names: list[str]) -> str:
    kind = draw(st.sampled_from(sorted(_OPTIONS) + ["admissibility"]))
    head = f"GATE {kind}"
    if kind == "admissibility":
        chosen = draw(st.lists(st.sampled_from(property_names), max_size=3))
        head += " " + _list(chosen, draw(gaps)) if chosen else ""
    options = [o for o in (draw(s) for s in _OPTIONS.get(kind, []) + _COMMON_OPTIONS) if o]
    parts = [head] + draw(st.permutations(options))
    return draw(gaps).join(parts) + draw(comments)


def _chain_text(draw, name: str, property_names: list[str]) -> str:
    lines = [f"CHAIN {name} {{{draw(comments)}"]
    if draw(st.booleans()):
        lines += ["  " + _gate_text(draw, property_names) for _ in range(draw(st.integers(1, 3)))]
    else:
        for rung in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
            model = draw(st.sampled_from(["", ' MODEL "openai/gpt-5-mini"', ' MODEL "y"']))
            lines.append(f"  RUNG {rung}{model} {{{draw(comments)}")
            lines += ["    " + _gate_text(draw, property_names) for _ in range(draw(st.integers(1, 3)))]
            lines.append("  }" + draw(comments))
    lines.append("}" + draw(comments))
    return "\n".join(lines)


_SELECTORS = st.sampled_from(["FINAL", "TEXT", "REASONING", "TOOL"])
_TOOL_CONDITIONS = st.sampled_from(["OUTCOME ok", "OUTCOME failed,\n error", "WHERE args.form == \"10-K\"",
                                    "WHERE result.items.0.n == -2.5", "WHERE result.ok == true",
                                    "WHERE result MATCHES \"FAILED*\"", ""])
_PATHS = st.sampled_from(["args.id", "result.status.code"])


def _map_rule_text(draw, kinds: list[str], property_names: list[str]) -> str:
    selector = draw(_SELECTORS)
    tool = selector == "TOOL"
    parts = [f"WHEN {selector}"]
    if tool and draw(st.booleans()):
        parts[0] += " " + _string(draw(st.sampled_from(["cancel_*", "lookup", "*"]) | labels.filter(bool)))
    if tool:
        parts += [c for c in draw(st.lists(_TOOL_CONDITIONS, max_size=2)) if c]
    if draw(st.integers(0, 4)) == 0:
        parts.append("SKIP")
    else:
        parts.append("AS " + draw(st.sampled_from(kinds)))
        text = st.just(_string("a label")) | labels.map(_string) | (_PATHS if tool else st.nothing())
        options = [f"LABEL {draw(text)}", f"DETAIL {draw(text)}", f"FOR {draw(st.sampled_from(property_names))}"]
        parts += draw(st.lists(st.sampled_from(options), max_size=3, unique=True))
    return draw(gaps).join(parts) + draw(comments)


def _mapping_text(draw, kinds: list[str], property_names: list[str]) -> str:
    rules = draw(st.lists(st.builds(lambda: None), max_size=4))
    lines = [f"MAP {{{draw(comments)}"] + ["  " + _map_rule_text(draw, kinds, property_names) for _ in rules]
    return "\n".join(lines + ["}" + draw(comments)])


def _property_text(draw, spec: dict) -> str:
    title = f" {_string(spec['title'])}" if spec["title"] is not None else ""
    lines = [f"PROPERTY {spec['name']}{title} {{{draw(comments)}"]
    statements = [("ADMIT", group) for group in spec["admit"] if group]
    statements += [("FORBID", group) for group in spec["forbid"] if group]
    statements += [("REJECT SHORTCUT", [_string(v) for v in g]) for g in spec["shortcuts"] if g]
    for keyword, values in draw(st.permutations(statements)):
        lines.append(f"  {keyword} {_list(values, draw(gaps))}{draw(comments)}")
    if spec["default"]:
        lines.append(f"  DEFAULT {spec['default']}{draw(comments)}")
    lines.append("}")
    return "\n".join(lines)


@st.composite
def bundles(draw, spec: dict) -> dict:
    """A random valid bundle for the rubric ``spec`` describes."""
    kinds = spec["kinds"] + ["not_a_declared_kind"]
    shortcut_labels = [v for p in spec["properties"] for g in p["shortcuts"] for v in g]
    label = st.sampled_from(shortcut_labels) | labels if shortcut_labels else labels
    property_names = [p["name"] for p in spec["properties"]]
    item = st.fixed_dictionaries(
        {"kind": st.sampled_from(kinds), "detail": labels, "source_label": label},
        optional={"property": st.sampled_from(property_names)},
    )
    return {"evidence": draw(st.lists(item, max_size=8))}
