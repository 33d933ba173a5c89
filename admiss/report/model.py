"""A report's data: what checking one bundle found. Renderers read it; it knows none of them."""

from __future__ import annotations

from typing import Any, Sequence

from admiss.compiler import CompiledRubric, PropertyResult


class ReportData:
    """The outcome of checking one bundle: per-property results, the chain, the verdict.

    ``evidence`` is the list of items the properties classified (the bundle's ``evidence``),
    kept by reference so a report can name an excluded item by its index.
    """

    __slots__ = ("rubric", "bundle_name", "properties", "missing_evidence_count", "aggregate", "chain", "verdict",
                 "evidence", "trace")

    def __init__(self, rubric: CompiledRubric, bundle_name: str | None, properties: list[PropertyResult],
                 chain: Any = None, evidence: Sequence[dict] = ()):
        self.rubric = rubric
        self.bundle_name = bundle_name
        self.properties = properties
        self.missing_evidence_count = [r.verdict for r in properties].count("no")
        self.aggregate = "pass" if self.missing_evidence_count == 0 else "fail"
        self.chain = chain
        # With a CHAIN the chain decides; without one, the properties' aggregate does.
        self.verdict = self.aggregate if chain is None else chain.verdict
        self.evidence = evidence
        # For a checked trace: its format and the steps not offered as evidence.
        self.trace: dict | None = None

    @property
    def verdict_note(self) -> str | None:
        """Which verdict is the answer, in words, when the chain's and the properties' differ:
        a reader shown a property's ``yes`` above a chain's ``fail`` should not have to guess."""
        if self.chain is None or self.verdict == self.aggregate:
            return None
        return (f"the answer is {self.verdict}: the chain's verdict decides the bundle, "
                f"not the properties' aggregate ({self.aggregate})")
