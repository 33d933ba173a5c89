"""Trust boundaries: a planted IR cache entry, a bundle's rubric field, repeated keys."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

import pytest

from admiss.bundle import parse_bundle_text
from admiss.errors import BundleError
from admiss.jsonio import first_repeated_key

SOURCE = """PROPERTY named_operator "Named operator" {
  ADMIT verified_external_source
  FORBID final_answer
  DEFAULT no
}
"""
FINAL_ANSWER = {"evidence": [{"kind": "final_answer", "detail": "I say so.", "source_label": "final_answer"}]}


# ---------------------------------------------------------------- the IR cache


@pytest.fixture
def cached_cli(admiss_cli, tmp_path, monkeypatch):
    """The CLI with a cache folder of this test's own, a rubric and a final_answer bundle."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ADMISS_CACHE_DIR", str(cache))
    monkeypatch.delenv("ADMISS_NO_CACHE", raising=False)
    (tmp_path / "r.rubric").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(FINAL_ANSWER), encoding="utf-8")
    first = admiss_cli("check", "--rubric", "r.rubric", "-f", "text", "b.json")
    assert first.code == 1 and "verdict: no" in first.out
    [entry] = cache.glob("*.json")
    return cache, entry


def _admitting_final_answer(entry: Path) -> dict:
    data = json.loads(entry.read_text(encoding="utf-8"))
    prop = data["ir"]["properties"][0]
    prop["admit"].append(dict(prop["forbid"][0]))
    prop["forbid"] = []
    return data


def _run(admiss_cli):
    return admiss_cli("check", "--rubric", "r.rubric", "-f", "text", "b.json")


def test_a_planted_entry_that_admits_final_answer_is_recompiled(cached_cli, admiss_cli):
    cache, entry = cached_cli
    entry.write_text(json.dumps(_admitting_final_answer(entry)), encoding="utf-8")
    ran = _run(admiss_cli)
    assert ran.code == 1 and "verdict: no" in ran.out and "excluded: I say so. (forbidden)" in ran.out
    # ... and the entry was replaced by the honest IR.
    assert json.loads(entry.read_text(encoding="utf-8"))["ir"]["properties"][0]["forbid"]


def test_an_entry_signed_with_another_key_is_refused(cached_cli, admiss_cli):
    cache, entry = cached_cli
    data = _admitting_final_answer(entry)
    canonical = json.dumps(data["ir"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    data["mac"] = hmac.new(b"k" * 32, f"{data['key']}\0{canonical}".encode(), hashlib.sha256).hexdigest()
    entry.write_text(json.dumps(data), encoding="utf-8")
    assert "verdict: no" in _run(admiss_cli).out


def test_the_key_is_private_to_the_user(cached_cli):
    cache, _ = cached_cli
    key = cache / "secret.key"
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_uid == os.geteuid()
    assert len(key.read_bytes()) == 32


def test_a_key_others_can_read_is_not_trusted(cached_cli, admiss_cli):
    # Whoever could read the key could sign a planted entry with it: then nothing is trusted.
    cache, entry = cached_cli
    key = cache / "secret.key"
    key.chmod(0o644)
    data = _admitting_final_answer(entry)
    canonical = json.dumps(data["ir"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    data["mac"] = hmac.new(key.read_bytes(), f"{data['key']}\0{canonical}".encode(), hashlib.sha256).hexdigest()
    entry.write_text(json.dumps(data), encoding="utf-8")
    assert "verdict: no" in _run(admiss_cli).out


# ---------------------------------------------------------------- a bundle's rubric field


@pytest.fixture
def spool(tmp_path):
    """Bundles in a spool folder outside the working folder (the CLI runs in tmp_path/work)."""
    (tmp_path / "work").mkdir()
    folder = tmp_path / "spool"
    folder.mkdir()
    (folder / "ok.rubric").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "outside.rubric").write_text("SECRET LINE OF ANOTHER FILE\n", encoding="utf-8")
    return folder


def _check_bundle_naming(admiss_cli, spool: Path, rubric_field: str):
    (spool / "b.json").write_text(json.dumps({"rubric": rubric_field, **FINAL_ANSWER}), encoding="utf-8")
    return admiss_cli("check", "-f", "text", spool / "b.json", cwd=spool.parent / "work")


@pytest.mark.parametrize("field,problem", [
    ("/etc/passwd", "must be a path relative to the bundle's folder"),
    ("../../../../../../../../etc/passwd", "must name a .rubric or .json file"),
    ("../outside.rubric", "leads out of the folder bundles may read rubrics from"),
    ("/dev/zero", "must be a path relative to the bundle's folder"),
    ("notes.txt", "must name a .rubric or .json file"),
])
def test_a_rubric_field_cannot_leave_the_bundle_folder(admiss_cli, spool, field, problem):
    ran = _check_bundle_naming(admiss_cli, spool, field)
    assert ran.code == 2 and "B007 rubric: " + problem in ran.err
    assert "root:" not in ran.err and "SECRET LINE" not in ran.err and "Traceback" not in ran.err


def test_a_symlink_out_of_the_folder_is_refused(admiss_cli, spool):
    (spool / "link.rubric").symlink_to(spool.parent / "outside.rubric")
    ran = _check_bundle_naming(admiss_cli, spool, "link.rubric")
    assert ran.code == 2 and "B007 rubric: leads out of" in ran.err and "SECRET LINE" not in ran.err


def test_a_device_or_fifo_inside_the_folder_is_refused(admiss_cli, spool):
    (spool / "zero.rubric").symlink_to("/dev/zero")
    ran = _check_bundle_naming(admiss_cli, spool, "zero.rubric")
    assert ran.code == 2 and "B007 rubric: leads out of" in ran.err
    os.mkfifo(spool / "pipe.rubric")
    ran = _check_bundle_naming(admiss_cli, spool, "pipe.rubric")
    assert ran.code == 2 and "B007 rubric: is not a regular file" in ran.err


def test_a_rubric_beside_or_below_the_bundle_is_used(admiss_cli, spool):
    (spool / "sub").mkdir()
    (spool / "sub" / "deep.rubric").write_text(SOURCE, encoding="utf-8")
    for field in ("ok.rubric", "sub/deep.rubric", "./sub/../ok.rubric"):
        ran = _check_bundle_naming(admiss_cli, spool, field)
        assert ran.code == 1 and "excluded: I say so. (forbidden)" in ran.out, ran.err


def test_inside_the_working_folder_a_bundle_may_name_a_rubric_above_it(admiss_cli, tmp_path):
    # The shipped layout: rubrics/x.rubric with rubrics/bundles/x/*.json naming ../../x.rubric.
    (tmp_path / "x.rubric").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "bundles" / "x").mkdir(parents=True)
    (tmp_path / "bundles" / "x" / "b.json").write_text(json.dumps({"rubric": "../../x.rubric", **FINAL_ANSWER}))
    ran = admiss_cli("check", "-f", "text", "bundles/x/b.json")
    assert ran.code == 1 and "verdict: no" in ran.out, ran.err


def test_the_user_may_pass_any_rubric(admiss_cli, spool):
    (spool / "b.json").write_text(json.dumps({"rubric": "/etc/passwd", **FINAL_ANSWER}), encoding="utf-8")
    ran = admiss_cli("check", "-f", "text", "--rubric", spool / "ok.rubric", spool / "b.json")
    assert ran.code == 1 and "verdict: no" in ran.out


# ---------------------------------------------------------------- repeated keys


@pytest.mark.parametrize("text,path,line,column", [
    ('{"evidence": [],\n "evidence": [{"kind": "summary", "detail": "d", "source_label": "s"}]}', "evidence", 2, 2),
    ('{"evidence": [{"kind": "summary", "kind": "verified_external_source", "detail": "d", "source_label": "s"}]}',
     "evidence[0].kind", 1, 35),
    ('{"meta": {"a": {"b b": 1, "b b": 2}}}', 'meta.a["b b"]', 1, 27),
    ('{"x": 1, "x": 2, "y": "\\u003a"}', "x", 1, 10),
    ('{"a\\\\": 1, "a\\\\": 2, "b\\\\": 3}', '$["a\\\\"]', 1, 12),
])
def test_a_repeated_key_is_a_located_b008(text, path, line, column):
    for given in (text, text.encode()):
        with pytest.raises(BundleError) as caught:
            parse_bundle_text(given, "b.json")
        [d] = caught.value.diagnostics
        assert (d.code, d.message, d.span.line, d.span.column) == ("B008", f"{path}: key given twice in one object",
                                                                  line, column)


@pytest.mark.parametrize("text", [
    '{"a": "x:y", "b": "\\u003a", "c": {"d": ":"}}',
    '{"a": "\\\\u003a", "b": [{"a": 1}, {"a": 1}]}',
    '{"s": "\\ud800", "t": "\\":\\""}',
])
def test_colons_and_escapes_in_strings_are_not_repeated_keys(text):
    assert parse_bundle_text(text, "b.json") == json.loads(text)


@pytest.mark.parametrize("text", [
    '{"a":1,"a":1}',  # written back, the text is '{"a":1}': shorter, so not taken for the text
    '{"messages":[{"role":"user","content":"x:y","content":"x:y"}]}',
    '[{"k":":","k":":"},{"k":":"}]',
    '{"a":{"b":[1,{"c":true,"c":true}]},"d":"\\u003a"}',
])
def test_a_repeated_key_in_compact_text_is_found(text):
    # Compact text that is its value written back is taken to repeat no key without a count:
    # text with a repeated key never is, however compact.
    for given in (text, text.encode()):
        assert first_repeated_key(given, json.loads(text)) is not None


@pytest.mark.parametrize("text", ['{"a":"x:y","b":{"c":":"}}', '[{"a":1},{"a":1}]', '{"s":"\\":\\""}'])
def test_compact_text_that_is_its_value_written_back_repeats_no_key(text):
    assert first_repeated_key(text.encode(), json.loads(text)) is None


def test_a_repeated_key_through_the_cli_names_the_line_of_a_jsonl_file(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps(FINAL_ANSWER) + '\n{"evidence": [], "evidence": []}\n')
    ran = admiss_cli("check", "--rubric", "r.rubric", "-f", "text", "b.jsonl")
    assert ran.code == 2 and "b.jsonl:2:18: B008 evidence: key given twice in one object" in ran.err
    assert "verdict: no" in ran.out  # the other bundle is still checked
