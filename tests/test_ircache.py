"""The compiled-IR cache: a hit skips the parser, a miss or a corrupt file compiles afresh."""

from __future__ import annotations

import json

import pytest

import admiss
from admiss import api, ircache

SOURCE = """PROPERTY named_operator "Named operator" {
  ADMIT verified_external_source
  FORBID final_answer
}
"""
BUNDLE = {"evidence": [{"kind": "final_answer", "detail": "FA", "source_label": "x"}]}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ADMISS_CACHE_DIR", str(folder))
    monkeypatch.delenv("ADMISS_NO_CACHE", raising=False)
    return folder


@pytest.fixture
def rubric_file(tmp_path):
    path = tmp_path / "op.rubric"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def _parser_forbidden(monkeypatch):
    def refuse(*args):
        raise AssertionError("the rubric was parsed; the cache should have answered")

    monkeypatch.setattr(api, "parse_source", refuse)


def test_a_miss_compiles_and_stores_the_ir(cache, rubric_file):
    rubric = admiss.load(rubric_file)
    [stored] = cache.glob("*.json")
    assert json.loads(stored.read_text(encoding="utf-8"))["ir"] == json.loads(rubric.to_ir_json())


def test_a_hit_gives_the_same_rubric_without_parsing(cache, rubric_file, monkeypatch):
    fresh = admiss.load(rubric_file)
    _parser_forbidden(monkeypatch)
    cached = admiss.load(rubric_file)
    assert cached.to_ir_json() == fresh.to_ir_json()
    assert cached.check(BUNDLE).to_dict() == fresh.check(BUNDLE).to_dict()


@pytest.mark.parametrize("garbage", ["", "{not json", '{"key": "other", "ir": {}}', "[]", '{"key": null}'])
def test_a_corrupt_file_is_ignored_and_replaced(cache, rubric_file, garbage):
    fresh = admiss.load(rubric_file)
    [stored] = cache.glob("*.json")
    stored.write_text(garbage, encoding="utf-8")
    assert admiss.load(rubric_file).to_ir_json() == fresh.to_ir_json()
    assert json.loads(stored.read_text(encoding="utf-8"))["ir"] == json.loads(fresh.to_ir_json())


def test_a_stored_ir_that_does_not_match_its_key_is_ignored(cache, rubric_file):
    admiss.load(rubric_file)
    [stored] = cache.glob("*.json")
    data = json.loads(stored.read_text(encoding="utf-8"))
    data["ir"]["properties"][0]["title"] = "Tampered"
    data["key"] = "0" * 64
    stored.write_text(json.dumps(data), encoding="utf-8")
    assert admiss.load(rubric_file).ir.properties[0].title == "Named operator"


def test_an_edited_source_is_a_miss(cache, rubric_file):
    admiss.load(rubric_file)
    rubric_file.write_text(SOURCE.replace("Named operator", "Operator"), encoding="utf-8")
    assert admiss.load(rubric_file).ir.properties[0].title == "Operator"
    assert len(list(cache.glob("*.json"))) == 2


def test_the_key_covers_the_rubric_name():
    # The name gives a header-less rubric its name and error messages their file.
    assert ircache.cache_key(SOURCE, "a.rubric") != ircache.cache_key(SOURCE, "b.rubric")


def test_errors_are_never_cached(cache, tmp_path):
    bad = tmp_path / "bad.rubric"
    bad.write_text("PROPERTY p { ADMIT no_such_kind }\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(admiss.AdmissError):
            admiss.load(bad)
    assert not list(cache.glob("*.json"))


def test_the_cache_can_be_turned_off(cache, rubric_file, monkeypatch):
    monkeypatch.setenv("ADMISS_NO_CACHE", "1")
    admiss.load(rubric_file)
    assert not cache.exists() or not list(cache.glob("*.json"))


def test_an_unwritable_cache_folder_only_costs_a_compile(tmp_path, rubric_file, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("ADMISS_CACHE_DIR", str(blocker / "cache"))
    assert admiss.load(rubric_file).check(BUNDLE).verdict == "fail"


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("ADMISS_CACHE_DIR", raising=False)
    monkeypatch.delenv("ADMISS_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ircache.cache_folder() == tmp_path / "admiss"
