"""JSON reports: the lean shape names each excluded item by its index (and step), the full
shape spells out its fields and clause, and every report dict is an object of its own."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
from admiss.jsonio import dumps_indented, dumps_line
from strategies import bundles, rubric_sources

SOURCE = """KINDS lab_result
PROPERTY named_operator "Named operator" {
  ADMIT verified_external_source
  FORBID final_answer
  REJECT SHORTCUT "8-K press-release exhibit"
}
PROPERTY reproduced {
  ADMIT lab_result
}
"""
NESTED_ITEM = {"kind": "final_answer", "detail": "FA", "source_label": "x", "tags": ["a"], "meta": {"n": 1}}
BUNDLE = {"evidence": [
    NESTED_ITEM,
    {"kind": "verified_external_source", "detail": "8K", "source_label": "8-K press-release exhibit"},
    {"kind": "lab_result", "detail": "lab", "source_label": "lab", "property": "reproduced"},
]}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
# Extra fields, including the names the report itself uses, in any position.
extra_fields = st.dictionaries(st.sampled_from(["reason", "clause", "index", "url", "ünï", "detail2"]), json_values,
                               max_size=3)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_lean_entry_is_the_full_entrys_detail_and_reason_and_points_at_its_item(data):
    source, spec = data.draw(rubric_sources())
    bundle = data.draw(bundles(spec))
    for item in bundle["evidence"]:
        extras = data.draw(extra_fields)
        fields = {**extras, **item} if data.draw(st.booleans()) else {**item, **extras}
        item.clear()
        item.update(fields)
    report = admiss.compile_source(source).check(bundle)
    lean, full = report.to_dict(), report.to_dict(full=True)
    assert [{k: v for k, v in p.items() if k != "excluded"} for p in lean["properties"]] == \
        [{k: v for k, v in p.items() if k != "excluded"} for p in full["properties"]]
    for lean_prop, full_prop in zip(lean["properties"], full["properties"]):
        assert [(e["detail"], e["reason"]) for e in lean_prop["excluded"]] == \
            [(e["detail"], e["reason"]) for e in full_prop["excluded"]]
        for entry, full_entry in zip(lean_prop["excluded"], full_prop["excluded"]):
            assert set(entry) == {"detail", "reason", "index"}
            item = bundle["evidence"][entry["index"]]
            assert (item["kind"], item["source_label"]) == (full_entry["kind"], full_entry["source_label"])

    # The bytes the CLI writes (built without copying the bundle's values) are this dict.
    for full in (False, True):
        assert report.to_json(full) == dumps_line(report.to_dict(full))
        assert report.to_json(full, indent=True) == dumps_indented(report.to_dict(full))


def test_the_lean_entry_carries_a_trace_steps_reference():
    bundle = {"evidence": [{"kind": "final_answer", "detail": "FA", "source_label": "x", "step": {"id": "s3"}},
                           {"kind": "final_answer", "detail": "FB", "source_label": "x"}]}
    report = admiss.compile_source(SOURCE).check(bundle)
    first, second = report.to_dict()["properties"][0]["excluded"]
    assert first == {"detail": "FA", "reason": "forbidden", "index": 0, "step": {"id": "s3"}}
    assert second == {"detail": "FB", "reason": "forbidden", "index": 1}
    first["step"]["id"] = "changed"
    assert bundle["evidence"][0]["step"] == {"id": "s3"}


def test_an_item_field_named_reason_does_not_hide_the_exclusion_reason():
    item = {"kind": "final_answer", "detail": "FA", "source_label": "x", "reason": "mine"}
    report = admiss.compile_source(SOURCE).check({"evidence": [item]})
    entry = report.to_dict(full=True)["properties"][0]["excluded"][0]
    assert entry["reason"] == "forbidden"
    assert list(entry)[:2] == ["detail", "reason"]
    assert report.to_dict()["properties"][0]["excluded"][0]["reason"] == "forbidden"


def _mutate_everything(value) -> None:
    if isinstance(value, dict):
        for key in list(value):
            _mutate_everything(value[key])
        value["mutated"] = True
    elif isinstance(value, list):
        for element in value:
            _mutate_everything(element)
        value.append("mutated")


def test_trace_reports_written_as_json_are_their_dicts():
    root = Path(__file__).resolve().parent.parent
    rubric = admiss.load(root / "rubrics" / "booking_cancellation.rubric", offline=True)
    for fixture in sorted((root / "tests" / "traces" / "fixtures").glob("*.json")):
        # A fixture admiss refuses (spans with no content, B031) has no report to write.
        reports = [r for _, r in rubric.check_runs(json.loads(fixture.read_text()), fixture.name)
                   if not isinstance(r, admiss.AdmissError)]
        for report in reports:
            for full in (False, True):
                assert report.to_json(full) == dumps_line(report.to_dict(full)), fixture.name


def test_report_dicts_share_no_mutable_object_with_each_other_or_the_bundle():
    rubric = admiss.compile_source(SOURCE)
    bundle = copy.deepcopy(BUNDLE)
    for full in (False, True):
        first = rubric.check(bundle).to_dict(full=full)
        expected = copy.deepcopy(first)
        same_report = rubric.check(bundle)
        mutated = same_report.to_dict(full=full)
        _mutate_everything(mutated)
        _mutate_everything(rubric.check(bundle).to_dict(full=full))
        assert first == expected
        assert same_report.to_dict(full=full) == expected
        assert rubric.check(bundle).to_dict(full=full) == expected
        assert bundle == BUNDLE


def test_an_item_excluded_by_several_properties_gets_an_entry_of_its_own_in_each():
    report = admiss.compile_source(SOURCE).check({"evidence": [NESTED_ITEM]})
    first, second = (p["excluded"][0] for p in report.to_dict(full=True)["properties"])
    assert first is not second and first["tags"] is not second["tags"] and first["clause"] is not second["clause"]
    assert (first["reason"], second["reason"]) == ("forbidden", "inadmissible")
    lean_first, lean_second = (p["excluded"][0] for p in report.to_dict()["properties"])
    assert lean_first is not lean_second and lean_first["index"] == lean_second["index"] == 0


def test_json_lines_are_compact_with_the_documented_field_order(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(SOURCE)
    (tmp_path / "b.jsonl").write_text((json.dumps(BUNDLE) + "\n") * 2)
    ran = admiss_cli("check", "--rubric", "r.rubric", "--format", "json", "b.jsonl")
    first, second = ran.out.splitlines()
    assert first.replace(":1", ":2", 1) == second
    report = json.loads(first)
    assert list(report) == ["bundle", "rubric", "verdict", "aggregate", "missing_evidence_count", "properties"]
    assert list(report["properties"][0]) == ["property", "name", "admissible", "forbidden", "shortcut_rejections",
                                             "evidence", "excluded", "rationale", "default_verdict", "verdict"]
    assert first.startswith('{"bundle":"b.jsonl:1","rubric":"r","verdict":"fail"')
