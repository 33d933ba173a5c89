"""Runs compiled checkers over a bundle and gathers the results into a report."""

from __future__ import annotations

from typing import Any

from admiss.bundle import property_problems, validate_bundle
from admiss.compiler import CompiledRubric, PropertyResult


class CheckReport:
    """The outcome of checking one bundle: per-property results and the verdict."""

    __slots__ = ("rubric", "bundle_name", "properties", "missing_evidence_count", "aggregate", "verdict")

    def __init__(self, rubric: CompiledRubric, bundle_name: str | None, properties: list[PropertyResult]):
        self.rubric = rubric
        self.bundle_name = bundle_name
        self.properties = properties
        self.missing_evidence_count = sum(1 for r in properties if r.verdict == "no")
        self.aggregate = "pass" if self.missing_evidence_count == 0 else "fail"
        self.verdict = self.aggregate

    def to_dict(self) -> dict[str, Any]:
        from admiss.report.json import report_dict

        return report_dict(self)

    def to_text(self) -> str:
        from admiss.report.text import report_text

        return report_text(self)


def _offered(items: list[dict], name: str, scoped: bool) -> list[dict]:
    # An item naming a property is offered to that property only.
    if not scoped:
        return items
    return [item for item in items if item.get("property", name) == name]


def check_bundle(rubric: CompiledRubric, bundle: Any, bundle_name: str | None = None) -> CheckReport:
    """Check ``bundle`` (a decoded JSON value) against ``rubric``; BundleError if it is malformed."""
    name = bundle_name or "<bundle>"
    validate_bundle(bundle, name)
    items = bundle.get("evidence", [])
    scoped = any("property" in item for item in items)
    if scoped:
        property_problems(bundle, rubric.property_names, name)
    results = [prop.check(_offered(items, prop.name, scoped)) for prop in rubric.properties]
    return CheckReport(rubric, bundle_name, results)
