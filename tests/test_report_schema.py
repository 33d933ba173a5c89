"""docs/report.schema.json (shipped as admiss/report.schema.json) describes both shapes of
the JSON report, and the error lines of a batch."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

import admiss
from admiss.bundle import parse_bundle_text

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
CASES = sorted(p for p in (ROOT / "tests" / "conformance" / "cases").iterdir() if (p / "expected.json").exists())


def test_the_package_ships_the_documented_schema():
    shipped = json.loads((resources.files("admiss") / "report.schema.json").read_text(encoding="utf-8"))
    assert shipped == SCHEMA
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def _report(case: Path):
    settings = {"bundle": "bundle.json"}
    if (case / "case.json").exists():
        settings.update(json.loads((case / "case.json").read_text(encoding="utf-8")))
    rubric = admiss.load(case / "rubric.rubric")
    bundle = parse_bundle_text((case / settings["bundle"]).read_text(encoding="utf-8"), settings["bundle"])
    return rubric.check(bundle, settings["bundle"])


@pytest.mark.parametrize("full", [False, True], ids=["lean", "full"])
def test_every_conformance_report_is_valid_in_both_shapes(full):
    checked = 0
    for case in CASES:
        data = _report(case).to_dict(full=full)
        VALIDATOR.validate(data)
        checked += 1
    assert checked > 50


def test_the_schema_tells_the_shapes_apart():
    case = next(c for c in CASES if "excluded" in (c / "expected_full.json").read_text() and
                '"index": 0' in (c / "expected.json").read_text())
    report = _report(case)
    lean, full = report.to_dict(), report.to_dict(full=True)
    entry = lean["properties"][0]["excluded"][0] if lean["properties"][0]["excluded"] else None
    assert entry is not None
    # A lean entry with an item field slipped in, or a full entry without its clause, is invalid.
    broken_lean = json.loads(json.dumps(lean))
    broken_lean["properties"][0]["excluded"][0]["kind"] = "final_answer"
    broken_full = json.loads(json.dumps(full))
    del broken_full["properties"][0]["excluded"][0]["clause"]
    for broken in (broken_lean, broken_full):
        assert not VALIDATOR.is_valid(broken)


def test_a_batch_error_line_is_valid(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text("PROPERTY p {\n  ADMIT verified_external_source\n}\n")
    (tmp_path / "b.jsonl").write_text('{"evidence": []}\n{not json\n')
    ran = admiss_cli("check", "--rubric", "r.rubric", "--format", "json", "b.jsonl")
    lines = [json.loads(line) for line in ran.out.splitlines()]
    assert len(lines) == 2 and "error" in lines[1]
    for line in lines:
        VALIDATOR.validate(line)
