"""The rich view (issue 21): the chain table gives the model its own column and each gate
its measured time; narrow terminals wrap rather than cut, and fall back to plain text."""

from __future__ import annotations

import io

from rich.table import Table

import admiss
from admiss.report.rich import chain_table, print_report, report_console

SOURCE = """PROPERTY sourced "Claims rest on a filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "news article"
}
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
    GATE admissibility sourced
  }
}
"""
BUNDLE = {"evidence": [{"kind": "verified_external_source", "detail": "10-K names it.", "source_label": "10-K"}],
          "candidates": [{"rung": "draft", "model": "openai/gpt-5-mini", "output": "not json"}]}


def _report():
    return admiss.compile_source(SOURCE, "t.rubric").check(BUNDLE)


def _cells(table: Table) -> dict[str, list[str]]:
    return {column.header: [str(cell) for cell in column.cells] for column in table.columns}


def test_the_model_has_its_own_column_and_the_gate_column_holds_gates():
    cells = _cells(chain_table(_report().chain))
    assert cells["model"][0] == "openai/gpt-5-mini"
    assert cells["gate"] == ["", "non_empty", "json_valid", "admissibility"]
    assert "openai/gpt-5-mini" not in cells["gate"]


def test_gate_times_are_the_measured_ones():
    report = _report()
    non_empty, json_valid, admissibility = report.chain.rungs[0].gates
    cells = _cells(chain_table(report.chain))
    # Sub-millisecond gates keep their measured digits (whole milliseconds showed 0 for all).
    assert cells["ms"][1:3] == [f"{non_empty.duration_ms:.3f}", f"{json_valid.duration_ms:.3f}"]
    assert json_valid.duration_ms > 0 and cells["ms"][2] != "0"
    assert admissibility.verdict == "skipped" and cells["ms"][3] == "—"
