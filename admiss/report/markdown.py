"""A Markdown summary of a check run, for ``$GITHUB_STEP_SUMMARY`` (``admiss check --format markdown``).

A count line, one table row per bundle, and each failed or errored bundle's report in a
collapsed block under it. Bundle names and report text are untrusted: a table cell escapes
what Markdown or HTML would read as markup, and a report sits in a code fence longer than
any run of backticks it holds, so no bundle can close the fence or forge a row.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Iterable

import attrs

from admiss.report.junit import xml_safe
from admiss.terminal import one_line

if TYPE_CHECKING:
    from admiss.errors import AdmissError
    from admiss.report.model import ReportData

_MARKUP = re.compile(r"([\\`*_\[\]<>|~])")
_ICONS = {"pass": "✅ pass", "fail": "❌ fail", "error": "⚠️ error"}


@attrs.frozen
class Row:
    """One bundle's line: its name, outcome ("pass", "fail" or "error"), the properties'
    verdicts and the chain's outcome in words, and the report shown when it did not pass."""

    name: str
    outcome: str
    properties: str
    chain: str
    text: str


def cell(text: str) -> str:
    """``text`` fit for one table cell: one line, each Markdown punctuation mark escaped."""
    return _MARKUP.sub(r"\\\1", xml_safe(one_line(text))).replace("&", "&amp;")


def fenced(text: str) -> str:
    """``text`` in a code fence of more backticks than any run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{xml_safe(text)}\n{fence}"


def report_row(report: "ReportData") -> Row:
    from admiss.report.text import report_text

    verdicts = ", ".join(f"{r.prop.name}: {r.verdict}" for r in report.properties)
    chain = ""
    if report.chain is not None:
        served = report.chain.served
        chain = f"{report.chain.name}: " + (f"served by {served}" if served is not None else "exhausted")
        chain += " (offline)" if report.chain.offline else ""
    return Row(report.bundle_name or "<bundle>", report.verdict, verdicts, chain, report_text(report))


def error_row(name: str, error: "AdmissError") -> Row:
    return Row(name, "error", "", "", error.render())


def _counts(rows: list[Row]) -> str:
    counts = {outcome: sum(1 for r in rows if r.outcome == outcome) for outcome in ("pass", "fail", "error")}
    return f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} could not be checked"


def markdown_summary(rows: Iterable[Row]) -> bytes:
    rows = list(rows)
    lines = [f"## admiss check: {_counts(rows)}", "", "| bundle | verdict | properties | chain |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {cell(r.name)} | {_ICONS[r.outcome]} | {cell(r.properties)} | {cell(r.chain)} |" for r in rows]
    for row in rows:
        if row.outcome != "pass":
            lines += ["", f"<details><summary>{html.escape(xml_safe(one_line(row.name)))}: {row.outcome}</summary>",
                      "", fenced(row.text), "", "</details>"]
    return ("\n".join(lines) + "\n").encode("utf-8")
