"""`admiss lsp` driven over stdio by pygls's LanguageClient: every feature, on real rubrics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from admiss.fmt import format_source
from admiss.lint import lint_source
from admiss.lsp import words
from lspkit import Session, doc, position

ROOT = Path(__file__).resolve().parents[2]

RUBRIC = '''KINDS lab_result

PROPERTY reproduced "The result was reproduced" {
  ADMIT lab_result, procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "re-ran only the summary step"
}

MAP {
  WHEN TOOL "run_lab" OUTCOME ok AS lab_result LABEL "lab" FOR reproduced
}

CHAIN serve {
  GATE non_empty ON ABSTAIN fail_closed
  GATE admissibility reproduced
}
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    session = Session(tmp_path_factory.mktemp("lsp"))
    yield session
    session.close()


@pytest.fixture
def uri(tmp_path) -> str:
    return (tmp_path / "t.rubric").as_uri()


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """``edits`` applied to ``text`` (UTF-16 columns, as the server was not asked otherwise)."""
    lines = text.split("\n")

    def offset(p: lsp.Position) -> int:
        line = lines[p.line].encode("utf-16-le")[:p.character * 2].decode("utf-16-le")
        return sum(len(x) + 1 for x in lines[:p.line]) + len(line)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def codes(diagnostics) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


# ------------------------------------------------------------ diagnostics


def test_diagnostics_as_you_type_carry_every_compile_error_and_finding_with_its_docs_page(server, uri):
    assert server.open(uri, RUBRIC) == []
    broken = RUBRIC.replace("ADMIT lab_result", "ADMIT lab_reslt").replace(" ON ABSTAIN fail_closed", "")
    found = server.change(uri, broken)
    assert codes(found) == codes(lint_source(broken, "t.rubric"))
    assert {"ADM009", "E101"} <= set(codes(found))
    by_code = {d.code: d for d in found}
    typo = by_code["E101"]
    assert typo.range == lsp.Range(position(broken, "lab_reslt"), position(broken, "lab_reslt", inside=9))
    assert typo.severity == lsp.DiagnosticSeverity.Error and "did you mean 'lab_result'" in typo.message
    assert by_code["ADM009"].severity == lsp.DiagnosticSeverity.Warning
    for diagnostic in found:
        page = diagnostic.code_description.href.removeprefix(words.docs_link(""))
        assert (ROOT / "docs" / page.split("#")[0]).is_file(), page
    assert by_code["ADM009"].code_description.href.endswith("docs/lint/ADM009.md")
    assert server.change(uri, RUBRIC) == []


def test_a_half_typed_rubric_gets_its_syntax_error_where_it_stops(server, uri):
    text = RUBRIC + "PROPERTY p {\n  ADMIT summary,\n"
    found = server.change(uri, text) if uri in server.versions else server.open(uri, text)
    assert codes(found) == ["E100"]
    assert found[0].range.start == position(text, "summary,", 1, inside=8)  # the list was left open


def test_columns_are_utf16_units(server, uri):
    text = 'PROPERTY p "\U0001F600 caf\u00e9" { ADMIT summry }\n'
    found = server.open(uri, text)
    typo = next(d for d in found if d.code == "E101")
    before = text[:text.index("summry")]
    assert typo.range.start == lsp.Position(0, len(before.encode("utf-16-le")) // 2)
    assert typo.range.start.character == len(before) + 1  # the emoji is two UTF-16 units


def test_columns_in_utf8_when_the_client_asks_for_them_as_helix_does(tmp_path):
    helix = lsp.ClientCapabilities(general=lsp.GeneralClientCapabilities(
        position_encodings=[lsp.PositionEncodingKind.Utf8, lsp.PositionEncodingKind.Utf32]))
    session = Session(tmp_path, helix)
    try:
        assert session.initialized.capabilities.position_encoding == lsp.PositionEncodingKind.Utf8
        uri = (tmp_path / "t.rubric").as_uri()
        text = 'PROPERTY p "caf\u00e9 \U0001F600" { ADMIT summry }\n'
        typo = next(d for d in session.open(uri, text) if d.code == "E101")
        assert typo.range.start.character == len(text[:text.index("summry")].encode("utf-8"))
        found = session.call(lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(text_document=doc(uri), position=typo.range.start))
        assert "`summry` is not a known evidence kind" in found.contents.value  # the position read in UTF-8 too
    finally:
        session.close()


# ------------------------------------------------------------ formatting


def test_formatting_gives_the_formatters_text_and_leaves_a_broken_text_alone(server, uri):
    messy = "PROPERTY   p {ADMIT summary\nFORBID final_answer}\n"
    server.open(uri, messy)
    edits = server.call(lsp.TEXT_DOCUMENT_FORMATTING, lsp.DocumentFormattingParams(
        text_document=doc(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
    assert apply(messy, edits) == format_source(messy) != messy
    server.change(uri, "PROPERTY p {")
    assert server.call(lsp.TEXT_DOCUMENT_FORMATTING, lsp.DocumentFormattingParams(
        text_document=doc(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True))) is None


# ------------------------------------------------------------ hover


def hover(server, uri, text, needle, occurrence=0) -> str | None:
    found = server.call(lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(
        text_document=doc(uri), position=position(text, needle, occurrence, inside=1)))
    return found.contents.value if found else None


def test_hover_says_what_a_kind_means_a_propertys_rules_and_a_gates_docs(server, uri):
    server.open(uri, RUBRIC)
    kind = hover(server, uri, RUBRIC, "procedurally_sound_tool_call")
    assert words.KIND_MEANINGS["procedurally_sound_tool_call"] in kind and "`reproduced`" in kind
    assert "untrusted" in hover(server, uri, RUBRIC, "flawed_tool_call")
    assert "declared by KINDS on line 1" in hover(server, uri, RUBRIC, "lab_result", 1)
    rules = hover(server, uri, RUBRIC, "reproduced", 2)  # in the admissibility gate
    assert "ADMIT lab_result, procedurally_sound_tool_call" in rules
    assert 'REJECT SHORTCUT "re-ran only the summary step"' in rules and "DEFAULT no" in rules
    gate = hover(server, uri, RUBRIC, "non_empty")
    assert words.gate_doc("non_empty").splitlines()[0] in gate and "ON ABSTAIN" in gate
    assert "fail_closed" in hover(server, uri, RUBRIC, "fail_closed") and "abstain counts as fail" in \
        hover(server, uri, RUBRIC, "fail_closed")
    assert hover(server, uri, RUBRIC, "FORBID").startswith("**FORBID**")
    assert hover(server, uri, RUBRIC, "re-ran") is None  # inside a string


def test_hover_in_a_text_that_does_not_parse_uses_the_last_that_did(server, uri):
    server.open(uri, RUBRIC)
    broken = RUBRIC.replace("CHAIN serve {", "CHAIN serve {{")
    assert codes(server.change(uri, broken)) == ["E100"]
    assert "ADMIT lab_result" in hover(server, uri, broken, "reproduced", 3)
    assert "declared by KINDS" in hover(server, uri, broken, "lab_result", 2)
    assert hover(server, uri, broken, "serve") is None


def test_kind_meanings_are_the_language_pages_table():
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    kinds = page[page.index("## KINDS"):page.index("## PROPERTY")]
    table = dict(re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", kinds, re.M))
    assert {k: table[k] for k in words.KIND_MEANINGS} == words.KIND_MEANINGS


# ------------------------------------------------------------ definition and references


def locations(found) -> list[tuple[int, int]]:
    return [(loc.range.start.line, loc.range.start.character) for loc in found]


def here(text, needle, occurrence=0) -> tuple[int, int]:
    p = position(text, needle, occurrence)
    return p.line, p.character


def test_definition_of_a_gated_property_and_of_a_declared_kind(server, uri):
    server.open(uri, RUBRIC)
    for needle in ("admissibility reproduced", "FOR reproduced"):
        found = server.call(lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(
            text_document=doc(uri), position=position(RUBRIC, needle, inside=len(needle) - 3)))
        assert locations(found) == [here(RUBRIC, "reproduced")]
    found = server.call(lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(
        text_document=doc(uri), position=position(RUBRIC, "lab_result", 2)))
    assert locations(found) == [here(RUBRIC, "lab_result")]


def test_references_of_a_property_and_of_a_kind(server, uri):
    server.open(uri, RUBRIC)

    def references(needle, occurrence, declaration=True):
        return locations(server.call(lsp.TEXT_DOCUMENT_REFERENCES, lsp.ReferenceParams(
            text_document=doc(uri), position=position(RUBRIC, needle, occurrence),
            context=lsp.ReferenceContext(include_declaration=declaration))))

    every = [here(RUBRIC, "reproduced", n) for n in (0, 2, 3)]  # not the title's word
    assert references("reproduced", 0) == every
    assert references("reproduced", 3, declaration=False) == every[1:]
    assert references("lab_result", 1) == [here(RUBRIC, "lab_result", n) for n in range(3)]


# ------------------------------------------------------------ completion


def labels(server, uri, text) -> list[str]:
    if uri in server.versions:
        server.change(uri, text)
    else:
        server.open(uri, text)
    lines = text.split("\n")
    found = server.call(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionParams(
        text_document=doc(uri), position=lsp.Position(len(lines) - 1, len(lines[-1]))))
    return [item.label for item in found.items]


def test_completion_offers_what_the_grammar_and_the_rubric_allow_there(server, uri):
    assert labels(server, uri, RUBRIC + "\n") == ["MAP", "PROPERTY", "CHAIN", "KINDS", "RUBRIC"]
    assert set(labels(server, uri, RUBRIC + "PROPERTY q { ADMIT summary, ")) == {
        "lab_result", *words.KIND_MEANINGS}
    chain = RUBRIC + "CHAIN c {\n  GATE "
    assert labels(server, uri, chain) == ["non_empty", "json_valid", "schema", "admissibility", "subprocess",
                                          "judge", "consistency", "tool_calls"]
    gated = labels(server, uri, chain + "admissibility ")
    assert "reproduced" in gated and not {"summary", "judge"} & set(gated)
    assert labels(server, uri, chain + "json_valid ON ABSTAIN ") == ["fail_open", "fail_closed"]
    judge = labels(server, uri, chain + 'judge MODEL "m" ')
    assert {"RUBRIC", "THRESHOLD", "ON ABSTAIN", "BUDGET"} <= set(judge)
    assert not {"MODEL", "FILE", "CMD", "K"} & set(judge)  # given already, or not a judge's
    assert labels(server, uri, RUBRIC + "PROPERTY q { DEFAULT ") == ["no", "yes"]
    assert labels(server, uri, RUBRIC + "PROPERTY q { # ADMIT ") == []


def test_completion_in_a_broken_text_still_knows_the_names_it_had(server, uri):
    assert labels(server, uri, RUBRIC + "\n")  # the last text that parsed
    text = RUBRIC + "PROPERTY q { ADMIT summary \nCHAIN c { GATE admissibility "
    assert labels(server, uri, text) == []  # the unclosed property makes CHAIN a syntax error
    assert "reproduced" in labels(server, uri, text.replace("summary \n", "summary }\n"))


# ------------------------------------------------------------ code actions


def fixed(server, uri, text, code) -> str:
    found = server.open(uri, text) if uri not in server.versions else server.change(uri, text)
    target = next(d for d in found if d.code == code)
    actions = server.call(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionParams(
        text_document=doc(uri), range=target.range, context=lsp.CodeActionContext(diagnostics=[target])))
    mine = [a for a in actions if a.diagnostics[0].code == code]
    assert len(mine) == 1, actions
    return apply(text, mine[0].edit.changes[uri])


@pytest.mark.parametrize("code, before", [
    ("ADM009", RUBRIC.replace(" ON ABSTAIN fail_closed", "")),
    ("ADM009", RUBRIC.replace("fail_closed", "fail_open")),
    ("ADM040", RUBRIC.replace("  GATE admissibility", '  GATE judge MODEL "a/b" RUBRIC "Which claim is unsupported?"\n'
                                                      "  GATE admissibility")),
    ("ADM004", RUBRIC.replace('  REJECT SHORTCUT "re-ran only the summary step"\n', "")),
    ("ADM004", 'PROPERTY p { ADMIT verified_external_source FORBID final_answer, reasoning_trace, summary, '
               'interpretation, flawed_tool_call }\n'),
    ("ADM005", RUBRIC.replace("FORBID final_answer, reasoning_trace, summary", "FORBID final_answer")),
    ("ADM005", RUBRIC.replace("  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call\n",
                              "")),
    ("ADM001", RUBRIC.replace('  REJECT SHORTCUT', "  DEFAULT yes\n  REJECT SHORTCUT")),
    ("ADM011", RUBRIC.replace("  GATE admissibility", '  GATE subprocess CMD ["python", "x.py"]\n  GATE admissibility')),
    ("ADM020", RUBRIC.replace("ADMIT lab_result,", "ADMIT lab_result, lab_result,")),
    ("ADM020", RUBRIC.replace("flawed_tool_call\n", "flawed_tool_call, summary\n", 1)),
    ("ADM100", RUBRIC.replace("  GATE admissibility", "  # admiss: ignore[ADM004]\n  GATE admissibility")),
    ("ADM100", RUBRIC.replace("GATE admissibility reproduced", "GATE admissibility reproduced  # admiss: ignore[ADM009]")),
    ("ADM100", RUBRIC.replace('  REJECT SHORTCUT "re-ran only the summary step"\n', "")
     .replace('reproduced" {', 'reproduced" {  # admiss: ignore[ADM004, ADM040] why')),
    ("E101", RUBRIC.replace("ADMIT lab_result", "ADMIT lab_reslt")),
    ("E105", RUBRIC.replace("admissibility reproduced", "admissibility reproducd")),
    ("E108", RUBRIC.replace("GATE non_empty", "GATE non_emty")),
    ("E111", RUBRIC.replace("fail_closed", "fail_close")),
])
def test_a_quick_fix_removes_its_finding(server, uri, code, before):
    assert code in codes(lint_source(before, "t.rubric"))
    after = fixed(server, uri, before, code)
    assert code not in codes(lint_source(after, "t.rubric")), after
    assert set(codes(lint_source(after, "t.rubric"))) <= set(codes(lint_source(before, "t.rubric"))) - {code}


def test_no_action_where_the_fix_is_not_obvious(server, uri):
    text = 'PROPERTY p { ADMIT summary REJECT SHORTCUT "blog" }\n'  # ADM002: admit or forbid, the author's call
    found = server.open(uri, text)
    target = next(d for d in found if d.code == "ADM002")
    assert not server.call(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionParams(
        text_document=doc(uri), range=target.range, context=lsp.CodeActionContext(diagnostics=[target])))


def test_gate_files_are_looked_for_beside_the_rubric(server, tmp_path):
    uri = (tmp_path / "s.rubric").as_uri()
    text = 'CHAIN c { GATE schema FILE "answer.schema.json" ON ABSTAIN fail_closed }\n'
    assert codes(server.open(uri, text)) == ["E119"]
    (tmp_path / "answer.schema.json").write_text("{}")
    server.client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=doc(uri)))
    assert server.change(uri, text) == []


def test_only_admiss_lsp_imports_pygls():
    import subprocess
    import sys

    code = ("import sys, admiss.cli, admiss.lint, admiss.lsp.document, admiss.lsp.complete, admiss.lsp.fixes, "
            "admiss.lsp.hover; sys.exit(bool({'pygls', 'lsprotocol'} & set(sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
    ran = subprocess.run([str(Path(sys.executable).parent / "admiss"), "lsp", "--help"], capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0 and "language server" in ran.stdout
