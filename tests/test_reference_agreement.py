"""The compiled engine agrees with the plain reference interpreter on random rubrics and bundles."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
import reference as ref
from reference import project

BUILTIN = (
    "procedurally_sound_tool_call",
    "verified_external_source",
    "final_answer",
    "reasoning_trace",
    "summary",
    "interpretation",
    "flawed_tool_call",
)
CUSTOM = ("ledger_entry", "receipt")
# Labels include characters that must survive string escapes and the text report.
LABELS = ("10-K filing", "blog post", 'say "hi"', "back\\slash", "café", "tab\there", "")
UNKNOWN_KINDS = ("gut_feeling",)
NAMES = ("alpha", "beta", "gamma")

kind_lists = st.lists(st.sampled_from(BUILTIN + CUSTOM), max_size=4)


@st.composite
def property_specs(draw, name: str) -> ref.PropertySpec:
    return ref.PropertySpec(
        name=name,
        title=draw(st.none() | st.sampled_from(("Title é", 'A "quoted" title'))),
        admit=tuple(draw(kind_lists)),
        forbid=tuple(draw(kind_lists)),
        shortcuts=tuple(draw(st.lists(st.sampled_from(LABELS), max_size=3))),
        default=draw(st.sampled_from(("yes", "no", None))) or "no",
    )


@st.composite
def rubrics(draw) -> ref.RubricSpec:
    count = draw(st.integers(min_value=1, max_value=len(NAMES)))
    return ref.RubricSpec("random", tuple(draw(property_specs(n)) for n in NAMES[:count]))


@st.composite
def evidence_items(draw, names: tuple[str, ...]) -> dict:
    item = {
        "kind": draw(st.sampled_from(BUILTIN + CUSTOM + UNKNOWN_KINDS)),
        "detail": draw(st.text(max_size=12)),
        "source_label": draw(st.sampled_from(LABELS)),
    }
    scope = draw(st.none() | st.sampled_from(names))
    if scope is not None:
        item["property"] = scope
    return item


def render_list(keyword: str, values: tuple[str, ...], as_strings: bool = False) -> str:
    if not values:
        return ""
    shown = [json.dumps(v, ensure_ascii=False) if as_strings else v for v in values]
    return f"  {keyword} " + ",\n    ".join(shown) + "\n"


def render_property(spec: ref.PropertySpec) -> str:
    title = f" {json.dumps(spec.title, ensure_ascii=False)}" if spec.title is not None else ""
    body = (
        render_list("ADMIT", spec.admit)
        + render_list("FORBID", spec.forbid)
        + render_list("REJECT SHORTCUT", spec.shortcuts, as_strings=True)
    )
    # DEFAULT no is written out only sometimes: omitting it must mean the same.
    if spec.default == "yes" or len(spec.admit) % 2:
        body += f"  DEFAULT {spec.default}\n"
    return f"PROPERTY {spec.name}{title} {{\n{body}}}\n"


def render(rubric: ref.RubricSpec) -> str:
    header = f'RUBRIC {rubric.name}\nKINDS {", ".join(CUSTOM)}\n\n'
    return header + "\n".join(render_property(p) for p in rubric.properties)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_engine_matches_reference(data):
    rubric = data.draw(rubrics())
    names = tuple(p.name for p in rubric.properties)
    bundle = {"evidence": data.draw(st.lists(evidence_items(names), max_size=6))}
    expected = ref.check(rubric, bundle)
    report = admiss.compile_source(render(rubric)).check(bundle)
    assert project(report.to_dict(), expected) == expected
    assert report.to_text() == ref.to_text(expected)


def test_reference_reproduces_the_seed_scenarios():
    """The reference itself must agree with the seed's asserts before it can judge the engine."""
    spec = ref.PropertySpec(
        "named_operator",
        "Named operator evidence comes from a 10-K or 10-Q filing",
        admit=("verified_external_source",),
        forbid=BUILTIN[2:],
        shortcuts=("8-K press-release exhibit", "earnings recap", "news article"),
    )
    answer = {"kind": "final_answer", "detail": "FA", "source_label": "final_answer"}
    exhibit = {"kind": "verified_external_source", "detail": "8K", "source_label": "8-K press-release exhibit"}
    filing = {"kind": "verified_external_source", "detail": "10K", "source_label": "10-K filing"}
    assert ref.check_property(spec, [answer])["excluded"] == [{"detail": "FA", "reason": "forbidden"}]
    assert ref.check_property(spec, [exhibit])["excluded"] == [{"detail": "8K", "reason": "shortcut-rejected"}]
    assert ref.check_property(spec, [filing])["evidence"] == ["10K"]
    lenient = ref.PropertySpec(spec.name, admit=spec.admit + ("final_answer",), forbid=BUILTIN[3:])
    assert ref.check_property(lenient, [answer])["verdict"] == "yes"
    no_shortcuts = ref.PropertySpec(spec.name, admit=spec.admit, forbid=spec.forbid)
    assert ref.check_property(no_shortcuts, [exhibit])["verdict"] == "yes"
