"""Reports: their data (model.py) and renderers: text (the seed's format), json, and rich
(the only module importing rich, loaded only when a report is drawn).

Imports flow one way: this package's CheckReport joins the data to the text and JSON
renderers; the renderers read the data; the data knows no renderer.
"""

from __future__ import annotations

from typing import Any

from admiss.report.json import report_dict, report_json
from admiss.report.model import ReportData
from admiss.report.text import report_text

__all__ = ["CheckReport", "ReportData"]


class CheckReport(ReportData):
    """A report with its two plain renderings, as ``Rubric.check`` returns it."""

    __slots__ = ()

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        """The JSON report: lean by default (each excluded item as its detail, reason and
        index), or with ``full=True`` each excluded item's own fields and the rubric clause."""
        return report_dict(self, full)

    def to_json(self, full: bool = False, indent: bool = False) -> bytes:
        """``to_dict(full)`` as UTF-8 JSON bytes: one line, or indented by two spaces."""
        return report_json(self, full, indent)

    def to_text(self) -> str:
        return report_text(self)
