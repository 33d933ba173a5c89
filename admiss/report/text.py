"""The seed's plain-text report, byte for byte.

One property gives exactly the Admissibility Gate document's ``to_report`` output; several
give their blocks in rubric order separated by one blank line, with the aggregate lines
directly after the last block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admiss.compiler import PropertyResult
    from admiss.interpreter import CheckReport


def property_lines(result: "PropertyResult") -> list[str]:
    prop = result.prop
    excluded = "; ".join(f"{item['detail']} ({reason})" for item, reason in result.excluded)
    return [
        f"property: {prop.display_name}",
        f"admissible: {', '.join(prop.admissible)}",
        f"forbidden: {', '.join(prop.forbidden)}",
        f"shortcut_rejections: {', '.join(prop.shortcut_rejections)}",
        # The seed prints the Python list itself, quotes and brackets included.
        f"evidence: {result.evidence}",
        f"excluded: {excluded}",
        f"rationale: {result.rationale}",
        f"default_verdict: {prop.default}",
        f"verdict: {result.verdict}",
    ]


def report_text(report: "CheckReport") -> str:
    blocks = ["\n".join(property_lines(r)) for r in report.properties]
    tail = f"aggregate: {report.aggregate}\nmissing_evidence_count: {report.missing_evidence_count}"
    return "\n\n".join(blocks) + "\n" + tail if blocks else tail
