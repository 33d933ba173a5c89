"""admiss.check_many and the pickling it relies on: order kept, errors in place, streaming."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

import admiss
from admiss.errors import BundleError

SOURCE = """PROPERTY named_operator "Named operator" {
  ADMIT verified_external_source
  FORBID final_answer
  REJECT SHORTCUT "8-K press-release exhibit"
}
PROPERTY reproduced {
  ADMIT procedurally_sound_tool_call
}
"""
ITEMS = [
    {"kind": "verified_external_source", "detail": "10-K", "source_label": "10-K filing"},
    {"kind": "final_answer", "detail": "FA", "source_label": "x", "tags": ["t"]},
    {"kind": "verified_external_source", "detail": "8K", "source_label": "8-K press-release exhibit"},
    {"kind": "procedurally_sound_tool_call", "detail": "run", "source_label": "ci", "property": "reproduced"},
]


def bundles(count: int) -> list:
    """Bundles that differ one from the next, with a malformed one every seventh."""
    out = []
    for n in range(count):
        if n % 7 == 3:
            out.append({"evidence": [{"kind": "final_answer"}]})
        else:
            out.append({"evidence": [dict(item, detail=f"{item['detail']} #{n}") for item in ITEMS[: 1 + n % 4]]})
    return out


def outcome(result):
    if isinstance(result, BundleError):
        return [d.message for d in result.diagnostics]
    return result.to_dict(), result.to_text(), result.verdict


@pytest.fixture(scope="module")
def rubric():
    return admiss.compile_source(SOURCE, "op.rubric")


def test_check_many_gives_what_check_gives_in_order_with_errors_in_place(rubric):
    data = bundles(30)
    results = list(admiss.check_many(rubric, data))
    for bundle, result in zip(data, results, strict=True):
        try:
            expected = outcome(rubric.check(bundle))
        except BundleError as error:
            expected = outcome(error)
        assert outcome(result) == expected


def test_check_many_parses_json_text(rubric):
    texts = [json.dumps(bundles(3)[2]), json.dumps(bundles(3)[2]).encode(), "{broken", b"\xff"]
    results = list(admiss.check_many(rubric, texts))
    assert outcome(results[0]) == outcome(results[1]) == outcome(rubric.check(bundles(3)[2]))
    assert [type(r) for r in results[2:]] == [BundleError, BundleError]
    assert results[2].diagnostics[0].code == "B001"


def test_check_many_with_a_pool_equals_check_many_without(rubric):
    data = bundles(50)
    alone = [outcome(r) for r in admiss.check_many(rubric, data)]
    pooled = list(admiss.check_many(rubric, data, jobs=2, chunk_size=8))
    assert [outcome(r) for r in pooled] == alone
    # Reports from the workers refer to this process's compiled rubric, not to copies.
    assert all(r.rubric is rubric.compiled for r in pooled if not isinstance(r, BundleError))


def test_check_many_yields_each_report_before_reading_further(rubric):
    read = []

    def source():
        for n, bundle in enumerate(bundles(5)):
            read.append(n)
            yield bundle

    results = admiss.check_many(rubric, source())
    next(results)
    assert read == [0]
    next(results)
    assert read == [0, 1]


def test_a_compiled_rubric_pickles_and_checks_alike_in_another_process(rubric, tmp_path):
    data = bundles(8)
    expected = [outcome(r) for r in admiss.check_many(rubric, data)]
    (tmp_path / "rubric.pickle").write_bytes(pickle.dumps(rubric))
    (tmp_path / "bundles.json").write_text(json.dumps(data), encoding="utf-8")
    script = (
        "import json, pickle, sys, admiss\n"
        "from admiss.errors import BundleError\n"
        "rubric = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "out = []\n"
        "for r in admiss.check_many(rubric, json.load(open(sys.argv[2]))):\n"
        "    out.append([d.message for d in r.diagnostics] if isinstance(r, BundleError)"
        " else [r.to_dict(), r.to_text(), r.verdict])\n"
        "print(json.dumps(out))\n"
    )
    ran = subprocess.run([sys.executable, "-c", script, str(tmp_path / "rubric.pickle"), str(tmp_path / "bundles.json")],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert [list(e) if isinstance(e, tuple) else e for e in expected] == json.loads(ran.stdout)


def test_a_report_pickles_to_an_equal_report(rubric):
    report = rubric.check(bundles(4)[3 - 1])
    again = pickle.loads(pickle.dumps(report))
    assert again.to_dict() == report.to_dict() and again.to_text() == report.to_text()


def test_a_bundle_error_pickles_with_its_diagnostics(rubric):
    with pytest.raises(BundleError) as caught:
        rubric.check(bundles(4)[3])
    again = pickle.loads(pickle.dumps(caught.value))
    assert again.diagnostics == caught.value.diagnostics and str(again) == str(caught.value)
