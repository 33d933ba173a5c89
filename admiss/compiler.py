"""IR to checkers: every set, string and clause a check needs is computed here, once.

A property becomes a lookup table from evidence kind to exclusion reason, so checking an
item is one dict lookup (and one set lookup for admitted kinds) instead of a walk over the
IR.

Compiled objects pickle by their IR, so they can cross processes. Unpickling a rubric that
this process already holds (same IR, same origin) gives the one already held, and
properties and exclusions pickle as references into their rubric: reports sent back from a
worker process share the receiver's compiled objects and their precomputed pieces.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Iterable

from admiss import ir
from admiss.collector import collector_paused

FORBIDDEN, INADMISSIBLE, SHORTCUT = "forbidden", "inadmissible", "shortcut-rejected"
ADMITTED_RATIONALE = "At least one admissible source supports the property."
MISSING_RATIONALE = "No admissible evidence supports this property."
DEFAULT_YES_RATIONALE = "No admissible evidence supports this property; DEFAULT yes accepts it anyway."
# Each rationale a property result can give, and the verdict it goes with (renderers
# precompute the lines that follow from them).
VERDICT_OF_RATIONALE = {ADMITTED_RATIONALE: "yes", DEFAULT_YES_RATIONALE: "yes", MISSING_RATIONALE: "no"}


def _unique(refs: Iterable[ir.Ref]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.value for r in refs))


def _first_spans(refs: Iterable[ir.Ref]) -> dict[str, object]:
    spans: dict[str, object] = {}
    for ref in refs:
        spans.setdefault(ref.value, ref.span)
    return spans


class Exclusion:
    """Why an item is excluded and the rubric clause that says so, with where it was written.

    One per (property, reason, kind or label), made at compile time, so checking an item
    only picks one. Renderers copy ``clause``, and keep their precomputed pieces of the
    report entry in ``renderings``.
    """

    # ``weight``: set only while telemetry counts this rubric's exclusions (what this
    # exclusion adds to its property's packed counts: CountingProperty, admiss/integrations/otel.py).
    __slots__ = ("owner", "reason", "clause", "renderings", "weight")

    def __init__(self, owner: "CompiledProperty", reason: str, keyword: str, value: str | None, span):
        self.owner = owner
        self.reason = reason
        self.clause = {"keyword": keyword, "value": value, "line": span.line, "column": span.column}
        self.renderings: dict[str, object] = {}

    def __reduce__(self):
        return (_exclusion_in, (self.owner, self.reason, self.clause["value"]))


def _exclusion_in(prop: "CompiledProperty", reason: str, value: str | None) -> Exclusion:
    if reason == FORBIDDEN:
        return prop._table[value]
    return prop._shortcuts[value] if reason == SHORTCUT else prop._inadmissible


# An evidence row, as bundle validation hands items to the checkers: (kind, source_label,
# item, the property it names or None).
Row = tuple


def rows_of(items: Iterable[dict]) -> list[Row]:
    """Evidence rows for items already known to keep the bundle rules."""
    return [(item["kind"], item["source_label"], item, item.get("property")) for item in items]


def offered(rows: list[Row], name: str) -> list[Row]:
    """The rows offered to property ``name``: those naming it, and those naming none."""
    return [row for row in rows if row[3] is None or row[3] == name]


def offered_rows(items: Iterable[dict], name: str) -> list[Row]:
    """``offered(rows_of(items), name)`` in one pass over the items (the admissibility gate's
    rows: a served request's gate checks one property or a few)."""
    return [(item["kind"], item["source_label"], item, named) for item in items
            if (named := item.get("property")) is None or named == name]


class CompiledProperty:
    """One property, ready to classify evidence rows."""

    __slots__ = (
        "owner", "index", "name", "display_name", "admissible", "forbidden", "shortcut_rejections", "default",
        "_table", "_shortcuts", "_inadmissible", "renderings",
    )

    def __init__(self, prop: ir.Property, owner: "CompiledRubric", index: int):
        self.owner = owner
        self.index = index
        self.name = prop.name
        self.display_name = prop.display_name
        self.admissible = _unique(prop.admit)
        self.forbidden = _unique(prop.forbid)
        self.shortcut_rejections = _unique(prop.shortcuts)
        self.default = prop.default.value
        # kind -> None (admitted unless its label is a shortcut) or its Exclusion. FORBID
        # overrides ADMIT, so forbidden kinds are written into the table last.
        table: dict[str, Exclusion | None] = dict.fromkeys(self.admissible)
        table.update({k: Exclusion(self, FORBIDDEN, "FORBID", k, s) for k, s in _first_spans(prop.forbid).items()})
        self._table = table
        self._shortcuts = {v: Exclusion(self, SHORTCUT, "REJECT SHORTCUT", v, s)
                           for v, s in _first_spans(prop.shortcuts).items()}
        self._inadmissible = Exclusion(self, INADMISSIBLE, "ADMIT", None, prop.admit_span)
        # Renderers keep precomputed pieces of this property's report here, made on first use.
        self.renderings: dict[str, object] = {}

    def __reduce__(self):
        return (_property_in, (self.owner, self.index))

    def check(self, rows: Iterable[Row]) -> "PropertyResult":
        table_get, shortcut_get, inadmissible = self._table.get, self._shortcuts.get, self._inadmissible
        admitted: list[dict] = []
        excluded: list[tuple[dict, Exclusion]] = []
        for kind, label, item, _ in rows:
            exclusion = table_get(kind, inadmissible)
            if exclusion is None:
                exclusion = shortcut_get(label)
                if exclusion is None:
                    admitted.append(item)
                    continue
            excluded.append((item, exclusion))
        return PropertyResult(self, admitted, excluded)

    def count_exclusions(self, weights: dict[str, int]) -> None:
        """Make this property's check count what it classifies from now on (CountingProperty),
        each exclusion adding its reason's weight in ``weights``. Telemetry's counts
        (admiss/integrations/otel.py): a plain check never pays for them."""
        for exclusion in (*filter(None, self._table.values()), *self._shortcuts.values(), self._inadmissible):
            exclusion.weight = weights[exclusion.reason]
        self.__class__ = CountingProperty


class CountingProperty(CompiledProperty):
    """A CompiledProperty whose check also counts: CountedResult.counts is the sum of its
    exclusions' weights plus its admitted count. Its loop is CompiledProperty.check's with
    the sum added (keep the two alike; tests/otel/test_otlp_wire.py compares their results).
    Not shared, measured: calling CompiledProperty.check and then summing the weights in C
    over its exclusions (operator.attrgetter) ran 105 M more instructions over 10,000
    bundles of 3 properties than this loop (callgrind, 3,671.5 M against 3,566.6 M, telemetry
    on), more than half of all telemetry adds there; and a shared loop that always sums
    would make every check without telemetry pay for it."""

    __slots__ = ()

    def check(self, rows: Iterable[Row]) -> "CountedResult":
        table_get, shortcut_get, inadmissible = self._table.get, self._shortcuts.get, self._inadmissible
        admitted: list[dict] = []
        excluded: list[tuple[dict, Exclusion]] = []
        counts = 0
        for kind, label, item, _ in rows:
            exclusion = table_get(kind, inadmissible)
            if exclusion is None:
                exclusion = shortcut_get(label)
                if exclusion is None:
                    admitted.append(item)
                    continue
            excluded.append((item, exclusion))
            counts += exclusion.weight
        result = CountedResult(self, admitted, excluded)
        result.counts = counts + len(admitted)
        return result


class PropertyResult:
    """What checking one property found: admitted items and their details, (item, Exclusion)
    pairs, the verdict."""

    __slots__ = ("prop", "admitted", "evidence", "excluded", "verdict", "rationale")

    def __init__(self, prop: CompiledProperty, admitted: list[dict], excluded: list[tuple[dict, Exclusion]]):
        self.prop = prop
        self.admitted = admitted
        self.evidence = [item["detail"] for item in admitted]
        self.excluded = excluded
        if admitted:
            self.verdict, self.rationale = "yes", ADMITTED_RATIONALE
        elif prop.default == "yes":
            self.verdict, self.rationale = "yes", DEFAULT_YES_RATIONALE
        else:
            self.verdict, self.rationale = "no", MISSING_RATIONALE


class CountedResult(PropertyResult):
    """A PropertyResult with its counts in one number (CountingProperty.check)."""

    __slots__ = ("counts",)


def _property_in(rubric: "CompiledRubric", index: int) -> CompiledProperty:
    return rubric.properties[index]


class CompiledRubric:
    """A rubric lowered to checkers. Use :meth:`check` (from admiss.api) to run it."""

    def __init__(self, rubric: ir.Rubric, origin: str | None = None):
        self.ir = rubric
        # Where the rubric was loaded from: relative paths in gates resolve against it.
        self.origin = origin
        self.name = rubric.name
        self.properties = tuple(CompiledProperty(p, self, i) for i, p in enumerate(rubric.properties))
        self.property_names = frozenset(p.name for p in self.properties)
        self._digest: str | None = None
        self._mapping = None

    @property
    def mapping(self):
        """The MAP block (or the default taxonomy) compiled, made on first use: only traces need it."""
        if self._mapping is None:
            from admiss.traces.mapping import CompiledMapping

            self._mapping = CompiledMapping(self.ir.mapping)
        return self._mapping

    def digest(self) -> str:
        """A hash of the IR, positions included (made on first use: pickling needs it)."""
        if self._digest is None:
            self._digest = hashlib.sha256(ir.to_json(self.ir).encode("utf-8")).hexdigest()
            _HELD.setdefault((self._digest, self.origin), self)
        return self._digest

    def __reduce__(self):
        return (_rubric_in, (self.ir, self.origin, self.digest()))


# The compiled rubrics this process holds, by (IR digest, origin), so unpickling one of them
# gives it back instead of a copy.
_HELD: "weakref.WeakValueDictionary[tuple[str, str | None], CompiledRubric]" = weakref.WeakValueDictionary()


def _rubric_in(rubric: ir.Rubric, origin: str | None, digest: str) -> CompiledRubric:
    held = _HELD.get((digest, origin))
    if held is None:
        held = CompiledRubric(rubric, origin)
        held._digest = digest
        _HELD[(digest, origin)] = held
    return held


def compile_ir(rubric: ir.Rubric, origin: str | None = None) -> CompiledRubric:
    """Checkers for an analysed IR (compile_ir trusts analysis to have passed)."""
    with collector_paused():
        return CompiledRubric(rubric, origin)
