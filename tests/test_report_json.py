"""JSON reports: lines built from precomputed pieces equal json.dumps of the report dict, and
every report dict is an object of its own."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
from admiss.report.json import report_json
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
extra_fields = st.dictionaries(st.sampled_from(["reason", "clause", "url", "page", "ünï", "detail2"]), json_values,
                               max_size=3)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_built_lines_are_the_bytes_json_dumps_gives(data):
    source, spec = data.draw(rubric_sources())
    bundle = data.draw(bundles(spec))
    for item in bundle["evidence"]:
        extras = data.draw(extra_fields)
        # Extra fields go before or after the required ones, to vary the key order.
        fields = {**extras, **item} if data.draw(st.booleans()) else {**item, **extras}
        item.clear()
        item.update(fields)
    name = data.draw(st.none() | st.text(max_size=8))
    report = admiss.compile_source(source).check(bundle, name)
    assert report_json(report) == json.dumps(report.to_dict(), ensure_ascii=False)


def test_an_item_field_named_reason_does_not_hide_the_exclusion_reason():
    item = {"kind": "final_answer", "detail": "FA", "source_label": "x", "reason": "mine"}
    entry = admiss.compile_source(SOURCE).check({"evidence": [item]}).to_dict()["properties"][0]["excluded"][0]
    assert entry["reason"] == "forbidden"
    assert list(entry)[:2] == ["detail", "reason"]


def _mutate_everything(value) -> None:
    if isinstance(value, dict):
        for key in list(value):
            _mutate_everything(value[key])
        value["mutated"] = True
    elif isinstance(value, list):
        for element in value:
            _mutate_everything(element)
        value.append("mutated")


def test_report_dicts_share_no_mutable_object_with_each_other_or_the_bundle():
    rubric = admiss.compile_source(SOURCE)
    bundle = copy.deepcopy(BUNDLE)
    first = rubric.check(bundle).to_dict()
    expected = copy.deepcopy(first)
    same_report = rubric.check(bundle)
    mutated = same_report.to_dict()
    _mutate_everything(mutated)
    _mutate_everything(rubric.check(bundle).to_dict())
    assert first == expected
    assert same_report.to_dict() == expected
    assert rubric.check(bundle).to_dict() == expected
    assert bundle == BUNDLE


def test_an_item_excluded_by_several_properties_gets_an_entry_of_its_own_in_each():
    report = admiss.compile_source(SOURCE).check({"evidence": [NESTED_ITEM]}).to_dict()
    first, second = (p["excluded"][0] for p in report["properties"])
    assert first is not second and first["tags"] is not second["tags"] and first["clause"] is not second["clause"]
    assert (first["reason"], second["reason"]) == ("forbidden", "inadmissible")
