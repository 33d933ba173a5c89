"""IR to checkers: every set, string and clause a check needs is computed here, once.

A property becomes a lookup table from evidence kind to exclusion reason, so checking an
item is one dict lookup (and one set lookup for admitted kinds) instead of a walk over the
IR. Compiled objects pickle by recompiling from their IR, so they can cross processes.
"""

from __future__ import annotations

from typing import Iterable

from admiss import ir

FORBIDDEN, INADMISSIBLE, SHORTCUT = "forbidden", "inadmissible", "shortcut-rejected"
ADMITTED_RATIONALE = "At least one admissible source supports the property."
MISSING_RATIONALE = "No admissible evidence supports this property."
DEFAULT_YES_RATIONALE = "No admissible evidence supports this property; DEFAULT yes accepts it anyway."

# Marks an admitted kind in the lookup table: admitted unless its label is a shortcut.
_ADMIT = None


def _unique(refs: Iterable[ir.Ref]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.value for r in refs))


def _clause(keyword: str, value: str | None, span) -> dict:
    return {"keyword": keyword, "value": value, "line": span.line, "column": span.column}


def _first_spans(refs: Iterable[ir.Ref]) -> dict[str, object]:
    spans: dict[str, object] = {}
    for ref in refs:
        spans.setdefault(ref.value, ref.span)
    return spans


class CompiledProperty:
    """One property, ready to classify evidence items."""

    __slots__ = (
        "name", "display_name", "admissible", "forbidden", "shortcut_rejections", "default",
        "_table", "_shortcuts", "_clauses", "_inadmissible_clause",
    )

    def __init__(self, prop: ir.Property):
        self.name = prop.name
        self.display_name = prop.display_name
        self.admissible = _unique(prop.admit)
        self.forbidden = _unique(prop.forbid)
        self.shortcut_rejections = _unique(prop.shortcuts)
        self.default = prop.default.value
        # FORBID overrides ADMIT, so forbidden kinds are written into the table last.
        table: dict[str, str | None] = {kind: _ADMIT for kind in self.admissible}
        table.update({kind: FORBIDDEN for kind in self.forbidden})
        self._table = table
        self._shortcuts = frozenset(self.shortcut_rejections)
        forbid_spans = _first_spans(prop.forbid)
        shortcut_spans = _first_spans(prop.shortcuts)
        self._clauses = {
            **{(FORBIDDEN, k): _clause("FORBID", k, s) for k, s in forbid_spans.items()},
            **{(SHORTCUT, v): _clause("REJECT SHORTCUT", v, s) for v, s in shortcut_spans.items()},
        }
        self._inadmissible_clause = _clause("ADMIT", None, prop.admit_span)

    def clause(self, reason: str, kind: str, source_label: str) -> dict:
        """The rubric clause that excluded an item, with where it was written."""
        if reason == FORBIDDEN:
            return self._clauses[(FORBIDDEN, kind)]
        if reason == SHORTCUT:
            return self._clauses[(SHORTCUT, source_label)]
        return self._inadmissible_clause

    def check(self, items: Iterable[dict]) -> "PropertyResult":
        table, shortcuts = self._table, self._shortcuts
        admitted: list[str] = []
        excluded: list[tuple[dict, str]] = []
        for item in items:
            reason = table.get(item["kind"], INADMISSIBLE)
            if reason is _ADMIT:
                if item["source_label"] not in shortcuts:
                    admitted.append(item["detail"])
                    continue
                reason = SHORTCUT
            excluded.append((item, reason))
        return PropertyResult(self, admitted, excluded)


class PropertyResult:
    """What checking one property found: admitted details, excluded items, the verdict."""

    __slots__ = ("prop", "evidence", "excluded", "verdict", "rationale")

    def __init__(self, prop: CompiledProperty, evidence: list[str], excluded: list[tuple[dict, str]]):
        self.prop = prop
        self.evidence = evidence
        self.excluded = excluded
        if evidence:
            self.verdict, self.rationale = "yes", ADMITTED_RATIONALE
        elif prop.default == "yes":
            self.verdict, self.rationale = "yes", DEFAULT_YES_RATIONALE
        else:
            self.verdict, self.rationale = "no", MISSING_RATIONALE


def offered(items: list[dict], name: str) -> list[dict]:
    """The items offered to property ``name``: those naming it, and those naming none."""
    return [item for item in items if item.get("property", name) == name]


class CompiledRubric:
    """A rubric lowered to checkers. Use :meth:`check` (from admiss.api) to run it."""

    def __init__(self, rubric: ir.Rubric, origin: str | None = None):
        self.ir = rubric
        # Where the rubric was loaded from: relative paths in gates resolve against it.
        self.origin = origin
        self.name = rubric.name
        self.properties = tuple(CompiledProperty(p) for p in rubric.properties)
        self.property_names = frozenset(p.name for p in self.properties)

    def __reduce__(self):
        return (CompiledRubric, (self.ir, self.origin))


def compile_ir(rubric: ir.Rubric, origin: str | None = None) -> CompiledRubric:
    """Checkers for an analysed IR (compile_ir trusts analysis to have passed)."""
    return CompiledRubric(rubric, origin)
