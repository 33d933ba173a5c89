"""A plain reference interpreter of admiss property semantics and report shape, for tests.

It restates the Admissibility Gate seed's rules directly, without the engine's grammar, IR
or compiler, so the tests can compare the compiled engine against an independent reading:

- an item is offered to every property, or, when it names one in ``property``, to that
  property only;
- each offered item is classified in a fixed order: its kind is forbidden, else its kind is
  not admitted (``inadmissible``), else its ``source_label`` is a rejected shortcut, else it
  is admitted (so FORBID overrides ADMIT, and a shortcut only matters for admitted kinds);
- a property is ``yes`` when anything was admitted, else its DEFAULT;
- the aggregate passes when every property is ``yes``; the missing count counts the ``no``s.

Only the seed's field names appear here (plus ``name``); the engine may add more, such as
the clause that excluded an item, which the conformance cases pin on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MISSING = "<missing>"
RATIONALE_ADMITTED = "At least one admissible source supports the property."
RATIONALE_MISSING = "No admissible evidence supports this property."
RATIONALE_DEFAULT_YES = (
    "No admissible evidence supports this property; DEFAULT yes accepts it anyway."
)


@dataclass(frozen=True)
class PropertySpec:
    """One PROPERTY as written: lists keep source order and may repeat entries."""

    name: str
    title: str | None = None
    admit: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    shortcuts: tuple[str, ...] = ()
    default: str = "no"

    @property
    def display_name(self) -> str:
        return self.title if self.title is not None else self.name


@dataclass(frozen=True)
class RubricSpec:
    name: str
    properties: tuple[PropertySpec, ...] = field(default_factory=tuple)


def unique(values: tuple[str, ...]) -> list[str]:
    """Entries written twice are shown once, where they first appeared."""
    return list(dict.fromkeys(values))


def classify(item: dict, spec: PropertySpec) -> str | None:
    """The exclusion reason for one item, or None when the item is admitted."""
    if item["kind"] in spec.forbid:
        return "forbidden"
    if item["kind"] not in spec.admit:
        return "inadmissible"
    if item["source_label"] in spec.shortcuts:
        return "shortcut-rejected"
    return None


def offered_to(spec: PropertySpec, evidence: list[dict]) -> list[dict]:
    """The items a property sees: unscoped ones and those naming it, in bundle order."""
    return [item for item in evidence if item.get("property", spec.name) == spec.name]


def rationale(admitted: list[str], default: str) -> str:
    if admitted:
        return RATIONALE_ADMITTED
    if default == "yes":
        return RATIONALE_DEFAULT_YES
    return RATIONALE_MISSING


def check_property(spec: PropertySpec, evidence: list[dict]) -> dict:
    admitted: list[str] = []
    excluded: list[dict] = []
    for item in offered_to(spec, evidence):
        reason = classify(item, spec)
        if reason is None:
            admitted.append(item["detail"])
        else:
            excluded.append({"detail": item["detail"], "reason": reason})
    return {
        "name": spec.name,
        "property": spec.display_name,
        "admissible": unique(spec.admit),
        "forbidden": unique(spec.forbid),
        "shortcut_rejections": unique(spec.shortcuts),
        "evidence": admitted,
        "excluded": excluded,
        "rationale": rationale(admitted, spec.default),
        "default_verdict": spec.default,
        "verdict": "yes" if admitted else spec.default,
    }


def check(rubric: RubricSpec, bundle: dict) -> dict:
    """The report for a rubric without chains: its verdict is the aggregate."""
    evidence = list(bundle.get("evidence", []))
    properties = [check_property(spec, evidence) for spec in rubric.properties]
    missing = sum(1 for p in properties if p["verdict"] == "no")
    aggregate = "pass" if missing == 0 else "fail"
    return {
        "rubric": rubric.name,
        "verdict": aggregate,
        "aggregate": aggregate,
        "missing_evidence_count": missing,
        "properties": properties,
    }


# The seed prints what a bundle wrote as it is. admiss shows every character that could act
# on a terminal as its Python escape, and the line ends of an excluded detail too (so that
# a detail cannot start a line of the report); written here character by character.
_BIDI = {0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _terminal_safe(text: str, keep_line_ends: bool = True) -> str:
    out = []
    for char in text:
        code = ord(char)
        if char == "\t" or (char == "\n" and keep_line_ends):
            out.append(char)
        elif char in "\n\r\v\f":
            out.append({"\n": "\\n", "\r": "\\r", "\v": "\\v", "\f": "\\f"}[char])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append("\\x%02x" % code)
        elif code in _BIDI or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(char)
    return "".join(out)


def property_block(prop: dict) -> str:
    # The seed prints the admitted details as a Python list, repr and all.
    excluded = "; ".join(f"{_terminal_safe(e['detail'], keep_line_ends=False)} ({e['reason']})"
                         for e in prop["excluded"])
    return "\n".join(
        [
            f"property: {prop['property']}",
            f"admissible: {', '.join(prop['admissible'])}",
            f"forbidden: {', '.join(prop['forbidden'])}",
            f"shortcut_rejections: {', '.join(prop['shortcut_rejections'])}",
            f"evidence: {prop['evidence']}",
            f"excluded: {excluded}",
            f"rationale: {prop['rationale']}",
            f"default_verdict: {prop['default_verdict']}",
            f"verdict: {prop['verdict']}",
        ]
    )


def to_text(report: dict) -> str:
    """Blocks in rubric order, one blank line apart; the aggregate follows the last block."""
    blocks = "\n\n".join(property_block(p) for p in report["properties"])
    tail = (
        f"aggregate: {report['aggregate']}\n"
        f"missing_evidence_count: {report['missing_evidence_count']}"
    )
    return _terminal_safe(f"{blocks}\n{tail}" if blocks else tail)


def project(actual, expected):
    """``actual`` cut down to the shape of ``expected``: dict keys it lists, lists as a whole.

    Comparing the projection with ``expected`` lets an engine add fields while every field a
    case pins must match; lists must match element by element and in length.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return actual
        return {key: project(actual.get(key, MISSING), value) for key, value in expected.items()}
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return actual
        return [project(a, e) for a, e in zip(actual, expected)]
    return actual
