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


LONG_TITLE = SOURCE.replace('"Claims rest on a filing"', '"Named operator evidence comes from a 10-K or 10-Q filing"')


def _drawn(report, width: int) -> str:
    out = io.StringIO()
    print_report(report, report_console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_a_long_property_title_wraps_instead_of_being_cut_at_60_columns():
    report = admiss.compile_source(LONG_TITLE, "t.rubric").check(BUNDLE)
    drawn = _drawn(report, 60)
    assert "…" not in drawn
    assert "Named operator evidence comes from a 10-K or 10-Q filing" in drawn
    assert all(len(line) <= 60 for line in drawn.splitlines())


def test_below_the_width_the_report_is_the_text_report():
    report = _report()
    assert _drawn(report, 40) == report.to_text() + "\n"
    assert _drawn(report, 80) != report.to_text() + "\n"


def test_savings_tables_stay_readable_at_40_columns():
    from admiss.report.rich import print_savings
    from admiss.savings import request_from_report, savings

    served = dict(BUNDLE, candidates=[dict(BUNDLE["candidates"][0], output="{}", cost_usd=0.0012)])
    report = admiss.compile_source(SOURCE, "t.rubric").check(served).to_dict()
    out = io.StringIO()
    print_savings(savings([request_from_report(report)]), report_console(file=out, width=40, color_system=None))
    text = out.getvalue()
    assert all(len(line) <= 40 for line in text.splitlines())
    # Every figure whole on its line, never folded across cells.
    for figure in ("model: $0.001200", "gate: json_valid", "gate $: $0.000000"):
        assert figure in text.splitlines(), text


LONG_MODELS = SOURCE.replace('RUNG draft MODEL "openai/gpt-5-mini" {', 'RUNG draft MODEL "anthropic/claude-sonnet-5" {')


def _long_model_report():
    bundle = dict(BUNDLE, candidates=[dict(BUNDLE["candidates"][0], model="anthropic/claude-sonnet-5")])
    return admiss.compile_source(LONG_MODELS, "t.rubric").check(bundle)


def test_names_and_figures_are_never_broken_across_lines():
    # At 100 columns the folded table read "anthropic/c" "laude-sonne" "t-5", "admissibilit" "y".
    for width in (60, 80, 100, 120, 160):
        drawn = _drawn(_long_model_report(), width)
        assert all(len(line) <= width for line in drawn.splitlines()), (width, drawn)
        for whole in ("anthropic/claude-sonnet-5", "admissibility", "json_valid", "0.000000"):
            assert whole in drawn, (width, whole, drawn)


def test_a_terminal_too_narrow_for_the_chain_table_gets_its_text_lines():
    report = _long_model_report()
    drawn = _drawn(report, 80)
    assert "rung draft [anthropic/claude-sonnet-5]: exhausted (model $0.000000)\n" in drawn
    assert "  gate json_valid: fail (output is not JSON: Expecting value at line 1 column 1)\n" in drawn
    assert "┃ model" not in drawn
    wide = _drawn(report, 160)
    assert "┃ model" in wide and "rung draft [" not in wide


def test_nothing_is_cut_with_an_ellipsis_in_a_narrow_terminal():
    # At 60 columns "shortcut-rejected" read "shortcut-reject…", at 50 the bundle's name in the
    # rule above the report "mixed_evidence.js…", and a clause "press-relea…".
    source = SOURCE.replace('REJECT SHORTCUT "news article"', 'REJECT SHORTCUT "news article", "8-K press-release exhibit"')
    bundle = {"evidence": [
        {"kind": "verified_external_source", "detail": "10-K filing says the operator is named.", "source_label": "10-K"},
        {"kind": "verified_external_source", "detail": "8-K exhibit says the operator is named.",
         "source_label": "8-K press-release exhibit"}], "output": "{}"}
    name = "rubrics/bundles/sec_filings/mixed_evidence.json"
    report = admiss.compile_source(source.split("CHAIN")[0], "t.rubric").check(bundle, name=name)
    for width in range(50, 81, 5):
        drawn = _drawn(report, width)
        assert "…" not in drawn, (width, drawn)
        assert "shortcut-rejected" in drawn and name in drawn, (width, drawn)
        assert all(len(line) <= width for line in drawn.splitlines()), (width, drawn)
