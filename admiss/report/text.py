"""The seed's plain-text report, byte for byte.

One property gives exactly the Admissibility Gate document's ``to_report`` output; several
give their blocks in rubric order separated by one blank line, with the aggregate lines
directly after the last block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admiss.cascade import ChainResult, GateRecord
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


def _gate_line(record: "GateRecord") -> str:
    shown = record.verdict if record.verdict == record.effective else f"{record.verdict} -> {record.effective}"
    score = f" score={record.score:g}" if record.score is not None else ""
    cost = f" ${record.gate_cost_usd:.6f}" if record.gate_cost_usd else ""
    reason = f" ({record.reason})" if record.reason else ""
    return f"  gate {record.gate}: {shown}{score}{cost}{reason}"


def chain_lines(chain: "ChainResult") -> list[str]:
    """The receipt in short: each rung tried, its gates, what served, the two spends."""
    lines = [f"chain: {chain.name}"]
    for rung in chain.rungs:
        model = f" [{rung.model}]" if rung.model else ""
        lines.append(f"rung {rung.rung}{model}: {rung.outcome} (model ${rung.cost_usd:.6f})")
        lines.extend(_gate_line(g) for g in rung.gates)
    lines.append(f"served: {chain.served if chain.served is not None else 'none (exhausted)'}")
    lines.append(f"model_cost_usd: {chain.model_cost_usd:.6f}")
    lines.append(f"gate_cost_usd: {chain.gate_cost_usd:.6f}")
    return lines


def report_text(report: "CheckReport") -> str:
    blocks = ["\n".join(property_lines(r)) for r in report.properties]
    tail = f"aggregate: {report.aggregate}\nmissing_evidence_count: {report.missing_evidence_count}"
    text = "\n\n".join(blocks) + "\n" + tail if blocks else tail
    if report.chain is None:
        return text
    # A chain's receipt follows the seed's report, so property-only rubrics keep its bytes.
    return text + "\n\n" + "\n".join(chain_lines(report.chain)) + f"\nverdict: {report.verdict}"
