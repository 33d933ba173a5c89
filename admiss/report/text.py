"""The seed's plain-text report, byte for byte.

One property gives exactly the Admissibility Gate document's ``to_report`` output; several
give their blocks in rubric order separated by one blank line, with the aggregate lines
directly after the last block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from admiss.compiler import VERDICT_OF_RATIONALE
from admiss.terminal import one_line, printable

if TYPE_CHECKING:
    from admiss.cascade import ChainResult, GateRecord
    from admiss.compiler import CompiledProperty, PropertyResult
    from admiss.report.model import ReportData


class _PropertyText:
    """The lines of a property's text block that do not depend on the bundle, made once."""

    __slots__ = ("head", "tails")

    def __init__(self, prop: "CompiledProperty"):
        self.head = "\n".join([
            f"property: {prop.display_name}",
            f"admissible: {', '.join(prop.admissible)}",
            f"forbidden: {', '.join(prop.forbidden)}",
            f"shortcut_rejections: {', '.join(prop.shortcut_rejections)}",
            "evidence: ",
        ])
        self.tails = {
            rationale: f"\nrationale: {rationale}\ndefault_verdict: {prop.default}\nverdict: {verdict}"
            for rationale, verdict in VERDICT_OF_RATIONALE.items()
        }


def _property_text(prop: "CompiledProperty") -> _PropertyText:
    parts = prop.renderings.get("text")
    if parts is None:
        parts = prop.renderings["text"] = _PropertyText(prop)
    return parts


def property_block(result: "PropertyResult") -> str:
    """One property's lines; the seed prints the evidence list as Python's repr of it."""
    parts = _property_text(result.prop)
    excluded = "; ".join([f"{one_line(item['detail'])} ({exclusion.reason})" for item, exclusion in result.excluded])
    return f"{parts.head}{result.evidence!r}\nexcluded: {excluded}{parts.tails[result.rationale]}"


def _gate_line(record: "GateRecord") -> str:
    shown = record.verdict if record.verdict == record.effective else f"{record.verdict} -> {record.effective}"
    score = f" score={record.score:g}" if record.score is not None else ""
    cost = f" ${record.gate_cost_usd:.6f}" if record.gate_cost_usd else ""
    reason = f" ({one_line(record.reason)})" if record.reason else ""
    return f"  gate {record.gate}: {shown}{score}{cost}{reason}"


def rung_lines(chain: "ChainResult") -> list[str]:
    """Each rung tried, with its model, outcome and spend, and its gates."""
    lines = []
    for rung in chain.rungs:
        model = f" [{one_line(rung.model)}]" if rung.model else ""
        lines.append(f"rung {rung.rung}{model}: {rung.outcome} (model ${rung.cost_usd:.6f})")
        lines.extend(_gate_line(g) for g in rung.gates)
    return lines


def chain_lines(chain: "ChainResult") -> list[str]:
    """The receipt in short: each rung tried, its gates, what served, the two spends."""
    lines = [f"chain: {chain.name}", *rung_lines(chain)]
    lines.append(f"served: {chain.served if chain.served is not None else 'none (exhausted)'}")
    lines.append(f"model_cost_usd: {chain.model_cost_usd:.6f}")
    lines.append(f"gate_cost_usd: {chain.gate_cost_usd:.6f}")
    return lines


def report_text(report: "ReportData") -> str:
    return printable(_report_text(report))


def _report_text(report: "ReportData") -> str:
    blocks = [property_block(r) for r in report.properties]
    tail = f"aggregate: {report.aggregate}\nmissing_evidence_count: {report.missing_evidence_count}"
    text = "\n\n".join(blocks) + "\n" + tail if blocks else tail
    if report.chain is None:
        return text
    # A chain's receipt follows the seed's report, so property-only rubrics keep its bytes.
    text = text + "\n\n" + "\n".join(chain_lines(report.chain)) + f"\nverdict: {report.verdict}"
    if report.verdict_note is not None:
        text += f"\nnote: {report.verdict_note}"
    return f"{OFFLINE_LINE}\n{text}" if report.chain.offline else text


# The first line of a report from an offline run whose chain has model gates.
OFFLINE_LINE = 'offline: no model was called; gates that needed one abstained with reason "offline"'

