"""docs/ir.schema.json describes exactly what `admiss compile` writes.

Compiled IR of rubrics covering every construct must validate; IR the compiler would never
write (an extra key, a wrong type, an option a gate kind does not take) must not.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import admiss
from admiss import ir

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "ir.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# Every construct of the language, spread over a few rubrics.
SOURCES = {
    "full.rubric": r'''
# The DESIGN.md example, plus the options it leaves out.
RUBRIC sec_filings "Operator claims must rest on SEC periodic filings"

PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
  DEFAULT no
}

CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid BUDGET 0.2 WINDOW 50
    GATE schema FILE "answer.schema.json"
    GATE admissibility named_operator
    GATE admissibility
  }
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE subprocess CMD ["python", "run_tests.py"] TIMEOUT 5s ON ABSTAIN fail_open
    GATE subprocess CMD ["true"]
    GATE judge MODEL "openai/gpt-5" THRESHOLD 0.7
      RUBRIC "Is the answer correct, complete, and free of unsupported claims?"
    GATE judge MODEL "openai/gpt-5" RUBRIC "Correct?"
    GATE consistency K 5 THRESHOLD 0.8
    GATE consistency K 1
    GATE consistency K 3 MEANING MODEL "openai/gpt-5-mini"
    GATE tool_calls TOOL "lookup_order", "issue_refund"
    GATE tool_calls
    GATE schema TOOL "issue_refund" FILE "answer.schema.json"
  }
  RUNG empty { }
}
''',
    "kinds_and_escapes.rubric": r'''
KINDS lab_result, peer_review   # declared kinds
KINDS  code_review
PROPERTY tested {                       # no title, DEFAULT omitted
  ADMIT procedurally_sound_tool_call,
        lab_result
  ADMIT code_review
  FORBID lab_result                     # FORBID overrides ADMIT
  REJECT SHORTCUT "quote \" backslash \\ slash \/ tab \t newline \n",
                  "unicode \u00e9 \ud83d\ude00 and raw é"
  REJECT SHORTCUT "# not a comment"
}
PROPERTY lenient "Accepts without evidence" { DEFAULT yes }
PROPERTY empty { }
''',
    "implicit.rubric": '''
PROPERTY p { ADMIT summary }
CHAIN quick { GATE non_empty GATE json_valid ON ABSTAIN fail_closed }
CHAIN judged {
  GATE judge MODEL "m" RUBRIC "q" THRESHOLD 1 BUDGET 0 WINDOW 1
  GATE admissibility p
  GATE subprocess CMD ["a", "b"] TIMEOUT 1.5m
  GATE subprocess CMD ["a"] TIMEOUT 250ms
}
''',
    "seed.rubric": '''
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
}
PROPERTY tested { ADMIT procedurally_sound_tool_call }
''',
    "empty.rubric": "# nothing but a comment\n",
    "mapping.rubric": '''
PROPERTY filed { ADMIT verified_external_source }
MAP {
  WHEN TOOL "fetch_*" OUTCOME ok WHERE args.form == "10-K" WHERE result.page == 3
    AS verified_external_source LABEL result.title DETAIL "a 10-K" FOR filed
  WHEN TOOL OUTCOME failed, bad_args WHERE result.ok == false WHERE args.x == null AS flawed_tool_call
  WHEN TOOL SKIP
  WHEN FINAL AS final_answer
  WHEN TEXT AS interpretation LABEL "assistant"
  WHEN REASONING SKIP
}
''',
}
# Rubrics whose reports can be compared without running a chain's gates.
WITHOUT_CHAINS = ["kinds_and_escapes.rubric", "seed.rubric", "empty.rubric", "mapping.rubric"]

BUNDLE = {
    "evidence": [
        {"kind": "final_answer", "detail": "Final answer says so.", "source_label": "final_answer"},
        {"kind": "verified_external_source", "detail": "8-K exhibit.", "source_label": "8-K press-release exhibit"},
        {"kind": "verified_external_source", "detail": "10-K filing.", "source_label": "10-K filing"},
        {"kind": "lab_result", "detail": "Lab result.", "source_label": "lab"},
        {"kind": "procedurally_sound_tool_call", "detail": "Tool ran.", "source_label": "pytest"},
        {"kind": "unknown_kind", "detail": "Something else.", "source_label": "x"},
    ]
}


def compiled(name: str) -> dict:
    return json.loads(admiss.compile_source(SOURCES[name], name).to_ir_json())


def errors(data: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(data)]


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_compiled_ir_validates(name):
    assert errors(compiled(name)) == []


def _shipped_rubrics() -> list[Path]:
    """Every shipped rubric that compiles: the examples and the conformance cases that are not error cases."""
    found = sorted((ROOT / "rubrics").glob("*.rubric"))
    found += sorted(p for p in (ROOT / "tests/conformance").glob("**/*.rubric")
                    if not (p.parent / "expected_error.json").exists())
    return found


@pytest.mark.parametrize("path", _shipped_rubrics(), ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_rubrics_validate(path):
    rubric = admiss.load(path)
    assert errors(json.loads(rubric.to_ir_json())) == []


def test_the_sources_cover_every_gate_kind_and_option():
    gates = [g for name in SOURCES for c in compiled(name)["chains"] for r in c["rungs"] for g in r["gates"]]
    assert {g["kind"] for g in gates} == set(ir.GATE_KINDS)
    assert {g["on_abstain"] for g in gates} == set(ir.ABSTAIN_POLICIES)
    options = {key for g in gates for key in g} - {"kind", "on_abstain", "span", "option_spans", "value_spans"}
    assert options == set(ir._GATE_OPTIONS) | {"properties"}
    rungs = [r for name in SOURCES for c in compiled(name)["chains"] for r in c["rungs"]]
    assert {r["implicit"] for r in rungs} == {True, False}


def test_schema_enums_match_the_ir_module():
    gate = SCHEMA["$defs"]["gate"]["properties"]
    assert gate["kind"]["enum"] == list(ir.GATE_KINDS)
    assert gate["on_abstain"]["enum"] == list(ir.ABSTAIN_POLICIES)
    assert SCHEMA["$defs"]["property"]["properties"]["default"]["properties"]["value"]["enum"] == list(ir.VERDICTS)


def _set(path: tuple, value):
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _delete(path: tuple):
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return mutate


GATE = ("chains", 0, "rungs", 0, "gates")
PROP = ("properties", 0)
MUTATIONS = {
    "extra top-level key": _set(("extra",), 1),
    "extra property key": _set(PROP + ("note",), "x"),
    "extra ref key": _set(PROP + ("admit", 0, "note"), "x"),
    "extra gate key": _set(GATE + (0, "note"), "x"),
    "ir_version 1": _set(("ir_version",), 1),
    "ir_version as string": _set(("ir_version",), "2"),
    "name missing": _delete(("name",)),
    "name not a string": _set(("name",), 5),
    "title not a string": _set(PROP + ("title",), 5),
    "span of three": _set(PROP + ("span",), [1, 2, 3]),
    "span as string": _set(("span",), "1:1"),
    "negative span": _set(PROP + ("admit_span",), [-1, 1, 1, 1]),
    "ref without span": _delete(PROP + ("forbid", 0, "span")),
    "kind not an identifier": _set(PROP + ("admit", 0, "value"), "not a kind"),
    "default maybe": _set(PROP + ("default", "value"), "maybe"),
    "unknown gate kind": _set(GATE + (0, "kind"), "json_vald"),
    "unknown abstain policy": _set(GATE + (0, "on_abstain"), "fail_close"),
    "file on non_empty": _set(GATE + (0, "file"), "x.json"),
    "schema without file": _delete(GATE + (2, "file")),
    "k as fraction": _set(("chains", 0, "rungs", 1, "gates", 4, "k"), 2.5),
    "k zero": _set(("chains", 0, "rungs", 1, "gates", 4, "k"), 0),
    "threshold above one": _set(("chains", 0, "rungs", 1, "gates", 4, "threshold"), 1.5),
    "empty cmd": _set(("chains", 0, "rungs", 1, "gates", 0, "cmd"), []),
    "zero timeout": _set(("chains", 0, "rungs", 1, "gates", 0, "timeout_s"), 0),
    "budget rate without window": _delete(GATE + (1, "budget_window")),
    "empty property list": _set(GATE + (3, "properties"), []),
    "unknown option span": _set(GATE + (0, "option_spans", "colour"), [1, 1, 1, 2]),
    "value span for the kind": _set(GATE + (0, "value_spans", "kind"), [1, 1, 1, 2]),
    "chain without rungs": _set(("chains", 0, "rungs"), []),
    "implicit rung with a model": _set(("chains", 0, "rungs", 0, "implicit"), True),
    "implicit rung beside another": _set(("chains", 0, "rungs", 2, "implicit"), True),
    "rung implicit missing": _delete(("chains", 0, "rungs", 0, "implicit")),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutated_ir_fails_validation(mutation):
    data = compiled("full.rubric")
    assert errors(data) == []
    broken = copy.deepcopy(data)
    MUTATIONS[mutation](broken)
    assert errors(broken) != []


# Option syntax, and the options each gate kind needs to compile at all.
OPTION_SOURCE = {
    "on_abstain": "ON ABSTAIN fail_closed",
    "file": 'FILE "a.json"',
    "cmd": 'CMD ["x"]',
    "timeout_s": "TIMEOUT 5s",
    "model": 'MODEL "m"',
    "threshold": "THRESHOLD 0.5",
    "rubric": 'RUBRIC "q"',
    "k": "K 3",
    "budget_rate": "BUDGET 0.1 WINDOW 10",
}
OPTION_VALUE = {
    "file": "a.json", "cmd": ["x"], "timeout_s": 5.0, "model": "m", "threshold": 0.5,
    "rubric": "q", "k": 3, "properties": [{"value": "p", "span": [1, 1, 1, 2]}],
}
REQUIRED = {"schema": ["file"], "subprocess": ["cmd"], "judge": ["model", "rubric"], "consistency": ["k"]}


def _gate_source(kind: str, options: list[str], with_property: bool) -> str:
    words = ["GATE", kind] + (["p"] if with_property else []) + [OPTION_SOURCE[o] for o in options]
    return "PROPERTY p { ADMIT summary }\nCHAIN c { " + " ".join(words) + " }\n"


@pytest.mark.parametrize("kind", ir.GATE_KINDS)
@pytest.mark.parametrize("option", sorted(set(OPTION_SOURCE) | {"properties"}))
def test_schema_and_compiler_agree_on_which_options_a_gate_kind_takes(kind, option):
    base = REQUIRED.get(kind, [])
    extra = [] if option in ("properties",) or option in base else [option]
    source = _gate_source(kind, base + extra, with_property=option == "properties")
    try:
        text = admiss.compile_source(source, "g.rubric").to_ir_json()
    except admiss.AdmissError as error:
        assert {d.code for d in error.diagnostics} == {"E109"}, error.render()
        # The compiler refuses the option, so the schema must refuse it too.
        data = json.loads(admiss.compile_source(_gate_source(kind, base, False), "g.rubric").to_ir_json())
        data["chains"][0]["rungs"][0]["gates"][0][option] = OPTION_VALUE[option]
        assert errors(data) != []
    else:
        assert errors(json.loads(text)) == []


CLI = [sys.executable, "-c", "from admiss.cli import main; main()"]


def _cli_compile(path: Path) -> bytes:
    return subprocess.run(CLI + ["compile", str(path)], check=True, capture_output=True).stdout


@pytest.fixture
def rubric_files(tmp_path, monkeypatch) -> dict[str, Path]:
    # Compiling a file checks that its gates' files and programs exist: give them some.
    (tmp_path / "answer.schema.json").write_text("{}", encoding="utf-8")
    programs = tmp_path / "bin"
    programs.mkdir()
    for program in ("python", "a"):
        (programs / program).write_text("#!/bin/sh\n", encoding="utf-8")
        (programs / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}:{os.environ.get('PATH', '')}")
    files = {}
    for name, text in SOURCES.items():
        files[name] = tmp_path / name
        files[name].write_text(text, encoding="utf-8")
    return files


def test_compile_twice_gives_identical_bytes(rubric_files):
    path = rubric_files["full.rubric"]
    first, second = _cli_compile(path), _cli_compile(path)
    assert first == second
    assert json.loads(first) == compiled("full.rubric")
    assert errors(json.loads(first)) == []


def test_compile_writes_the_same_bytes_to_a_file(rubric_files, tmp_path):
    path, out = rubric_files["kinds_and_escapes.rubric"], tmp_path / "out.json"
    subprocess.run(CLI + ["compile", str(path), "-o", str(out)], check=True)
    assert out.read_bytes() == _cli_compile(path)


def test_compiling_the_ir_again_gives_the_same_bytes(rubric_files, tmp_path):
    ir_file = tmp_path / "full.json"
    ir_file.write_bytes(_cli_compile(rubric_files["full.rubric"]))
    assert _cli_compile(ir_file) == ir_file.read_bytes()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_loading_the_ir_equals_loading_the_source(rubric_files, tmp_path, name):
    ir_file = tmp_path / (Path(name).stem + ".json")
    ir_file.write_text(admiss.load(rubric_files[name]).to_ir_json(), encoding="utf-8")
    from_source, from_ir = admiss.load(rubric_files[name]), admiss.load(ir_file)
    assert from_ir.ir == from_source.ir
    assert from_ir.to_ir_json() == from_source.to_ir_json()


@pytest.mark.parametrize("name", WITHOUT_CHAINS)
def test_reports_through_the_ir_equal_reports_through_the_source(rubric_files, tmp_path, name):
    ir_file = tmp_path / (Path(name).stem + ".json")
    ir_file.write_text(admiss.load(rubric_files[name]).to_ir_json(), encoding="utf-8")
    from_source, from_ir = admiss.load(rubric_files[name]), admiss.load(ir_file)
    assert from_ir.check(BUNDLE).to_dict() == from_source.check(BUNDLE).to_dict()
    assert from_ir.check(BUNDLE).to_text() == from_source.check(BUNDLE).to_text()


def test_the_report_comparison_sees_every_exclusion_reason():
    report = admiss.compile_source(SOURCES["seed.rubric"], "seed.rubric").check(BUNDLE).to_dict()
    reasons = {e["reason"] for p in report["properties"] for e in p["excluded"]}
    assert reasons == {"forbidden", "inadmissible", "shortcut-rejected"}


def test_equality_ignores_spans_but_the_bytes_keep_them():
    one = admiss.compile_source("PROPERTY p { ADMIT summary }", "r.rubric")
    other = admiss.compile_source("\n\nPROPERTY   p {\n  ADMIT\n    summary\n}\n", "r.rubric")
    assert one.ir == other.ir
    assert one.to_ir_json() != other.to_ir_json()


def test_a_map_block_is_written_as_mapping_and_loads_back(tmp_path):
    # Version 2 (MEANING MODEL and MAP) is written for every rubric; only one with a MAP
    # block has the mapping key, and version 1 IR is refused (its consumers know neither).
    data = compiled("mapping.rubric")
    assert data["ir_version"] == 2 and errors(data) == []
    assert all("mapping" not in compiled(name) for name in SOURCES if name != "mapping.rubric")
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps(data))
    assert admiss.load(path).ir == admiss.compile_source(SOURCES["mapping.rubric"], "mapping.rubric").ir
    without_mapping = {key: value for key, value in data.items() if key != "mapping"}
    assert errors(without_mapping) == []
    assert errors({**data, "ir_version": 1}) != []
