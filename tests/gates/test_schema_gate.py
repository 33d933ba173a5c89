"""The schema gate: the full JSON Schema standard, a validator built once, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from gatekit import gate

from admiss.errors import InputError
from admiss.gates import schema
from admiss.gates.base import ABSTAIN, FAIL, PASS, Candidate, GateContext

ORDER = {
    "type": "object",
    "required": ["total", "items"],
    "properties": {
        "total": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "status": {"enum": ["open", "paid"]},
    },
    "$defs": {"item": {"type": "object", "required": ["price"], "properties": {"price": {"type": "number"}}}},
    "additionalProperties": False,
}


def build(tmp_path: Path, document, name: str = "order.schema.json"):
    text = document if isinstance(document, str) else json.dumps(document)
    (tmp_path / name).write_text(text)
    return schema.build(gate("schema", file=name), GateContext(tmp_path, rubric_file="r.rubric"))


def check(tmp_path: Path, document, output: str):
    return build(tmp_path, document).run(Candidate(output=output))


def test_valid_output_passes(tmp_path):
    result = check(tmp_path, ORDER, '{"total": 3, "items": [{"price": 1}, {"price": 2}], "status": "paid"}')
    assert (result.verdict, result.cost_usd) == (PASS, 0)


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('{"total": 3, "items": [{"price": 1}, {"price": 2}, {"price": "x"}]}', "$.items[2].price: 'x' is not of type 'number'"),
        ('{"total": 3}', "$: 'items' is a required property"),
        ('{"total": -1, "items": []}', "$.total: -1 is less than the minimum of 0"),
        ('{"total": 1, "items": [], "status": "lost"}', "$.status: 'lost' is not one of ['open', 'paid']"),
        ('{"total": 1, "items": [], "extra": 1}', "Additional properties are not allowed ('extra' was unexpected)"),
    ],
)
def test_invalid_output_fails_naming_the_json_path(tmp_path, output, reason):
    result = check(tmp_path, ORDER, output)
    assert result.verdict == FAIL
    assert reason in result.reason


def test_several_errors_are_counted(tmp_path):
    result = check(tmp_path, ORDER, '{"total": "3", "items": {}}')
    assert result.verdict == FAIL
    assert "(and 1 more)" in result.reason


@pytest.mark.parametrize("output", [None, "total: 3", ""])
def test_output_that_is_not_json_fails(tmp_path, output):
    result = check(tmp_path, ORDER, output)
    assert result.verdict == FAIL
    assert "no output" in result.reason or "not JSON" in result.reason


def test_the_draft_comes_from_dollar_schema(tmp_path):
    # Draft 4 reads a boolean exclusiveMaximum; 2020-12 would reject this schema outright.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 5, "exclusiveMaximum": True}
    gate_check = build(tmp_path, draft4)
    assert gate_check.run(Candidate(output="4")).verdict == PASS
    assert gate_check.run(Candidate(output="5")).verdict == FAIL


def test_the_default_draft_is_2020_12(tmp_path):
    # prefixItems exists only from 2020-12 on.
    tuple_schema = {"type": "array", "prefixItems": [{"type": "string"}], "items": False}
    gate_check = build(tmp_path, tuple_schema)
    assert gate_check.run(Candidate(output='["a"]')).verdict == PASS
    assert gate_check.run(Candidate(output='["a", 1]')).verdict == FAIL
    assert gate_check.run(Candidate(output="[1]")).verdict == FAIL


def test_formats_are_checked(tmp_path):
    gate_check = build(tmp_path, {"type": "string", "format": "ipv4"})
    assert gate_check.run(Candidate(output='"10.0.0.1"')).verdict == PASS
    assert gate_check.run(Candidate(output='"10.0.0.999"')).verdict == FAIL


def test_the_validator_is_built_once_not_per_candidate(tmp_path, monkeypatch):
    gate_check = build(tmp_path, ORDER)
    (tmp_path / "order.schema.json").write_text("{ broken")
    built = []
    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", classmethod(lambda cls, s: built.append(s)))
    for _ in range(3):
        assert gate_check.run(Candidate(output='{"total": 1, "items": []}')).verdict == PASS
    assert built == []


def test_an_unresolvable_ref_abstains_as_the_gates_fault(tmp_path):
    # A pointer into the schema that leads nowhere is found only when a candidate reaches it.
    result = check(tmp_path, {"$ref": "#/$defs/nowhere"}, "1")
    assert (result.verdict, result.fault) == (ABSTAIN, "gate")
    assert "$ref" in result.reason


def test_a_missing_schema_file_is_an_input_error_at_the_rubric(tmp_path):
    with pytest.raises(InputError) as caught:
        schema.build(gate("schema", file="nope.json"), GateContext(tmp_path, rubric_file="r.rubric"))
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.file == "r.rubric"
    assert f"schema file not found: {tmp_path / 'nope.json'}" in diagnostic.message


def test_a_schema_that_is_not_json_is_located_at_line_and_column(tmp_path):
    with pytest.raises(InputError) as caught:
        build(tmp_path, '{\n  "type": "object",\n  "required": [1,]\n}')
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.file == str(tmp_path / "order.schema.json")
    assert (diagnostic.span.line, diagnostic.span.column) == (3, 18)
    assert "schema file is not JSON" in diagnostic.message
    assert str(caught.value).startswith(f"{tmp_path / 'order.schema.json'}:3:18:")


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"type": "objekt"}, "not a valid JSON Schema: $.type"),
        ({"required": "total"}, "not a valid JSON Schema"),
        ({"$schema": "https://example.com/my-draft", "type": "object"}, "unknown $schema"),
        ([1, 2], "a JSON Schema is an object or a boolean"),
    ],
)
def test_an_invalid_schema_is_an_input_error(tmp_path, document, says):
    with pytest.raises(InputError) as caught:
        build(tmp_path, document)
    assert says in caught.value.diagnostics[0].message


def test_a_schema_gate_without_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="needs FILE"):
        schema.build(gate("schema"), GateContext(tmp_path))
