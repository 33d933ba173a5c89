"""admiss.Router's errors give hints a Python caller can follow (issue 21, item 7): chain=,
not --chain; no offline run, which a live router does not have. And a Config object passed
as config= is the config it uses."""

from __future__ import annotations

import pytest

import admiss
from admiss.config import load_config

TWO_CHAINS = '''PROPERTY p { ADMIT summary REJECT SHORTCUT "x" FORBID final_answer }
CHAIN first { RUNG a MODEL "openai/x" { GATE non_empty } }
CHAIN second { RUNG a MODEL "openai/x" { GATE non_empty } }
'''
JUDGED = '''PROPERTY p { ADMIT summary REJECT SHORTCUT "x" FORBID final_answer }
CHAIN c { RUNG a MODEL "openai/x" { GATE judge MODEL "anthropic/y" RUBRIC "ok?" } }
'''
CONFIG = '[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\n'


def _error(tmp_path, source: str, **options) -> admiss.AdmissError:
    (tmp_path / "r.rubric").write_text(source, encoding="utf-8")
    (tmp_path / "admiss.toml").write_text(CONFIG, encoding="utf-8")
    with pytest.raises(admiss.AdmissError) as caught:
        admiss.Router(tmp_path / "r.rubric", config=tmp_path / "admiss.toml", **options)
    return caught.value


def test_several_chains_hint_names_the_chain_argument(tmp_path):
    diagnostic = _error(tmp_path, TWO_CHAINS).diagnostics[0]
    assert diagnostic.code == "E003"
    assert diagnostic.hint == "pick one with chain=NAME: first, second"


def test_missing_provider_hint_suggests_no_offline_run(tmp_path):
    diagnostic = _error(tmp_path, JUDGED).diagnostics[0]
    assert diagnostic.code == "E140"
    assert diagnostic.hint == f"add [providers.anthropic] with its base_url to {tmp_path / 'admiss.toml'}"


def test_check_hints_still_name_the_option_and_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the repository's own admiss.toml names providers
    (tmp_path / "r.rubric").write_text(TWO_CHAINS, encoding="utf-8")
    with pytest.raises(admiss.AdmissError) as caught:
        admiss.load(tmp_path / "r.rubric").check({"evidence": [], "output": "x"})
    assert caught.value.diagnostics[0].hint == "pick one with --chain NAME (chain=NAME in Python): first, second"
    (tmp_path / "j.rubric").write_text(JUDGED, encoding="utf-8")
    with pytest.raises(admiss.AdmissError) as caught:
        admiss.load(tmp_path / "j.rubric").prepare()
    assert "or run offline (admiss check --offline" in caught.value.diagnostics[0].hint


def test_a_config_object_is_the_config_the_router_uses(tmp_path, monkeypatch):
    (tmp_path / "r.rubric").write_text(TWO_CHAINS, encoding="utf-8")
    (tmp_path / "elsewhere.toml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no admiss.toml here nor beside the rubric
    router = admiss.Router(tmp_path / "r.rubric", config=load_config(tmp_path / "elsewhere.toml"), chain="first")
    try:
        assert "openai" in router.config.providers
    finally:
        router.close()


def test_serve_without_a_provider_suggests_no_offline_check(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(JUDGED, encoding="utf-8")
    (tmp_path / "admiss.toml").write_text(CONFIG, encoding="utf-8")
    ran = admiss_cli("serve", "r.rubric", "--port", "0")
    assert ran.code == 2, ran.out + ran.err
    assert "E140 judge gate on rung a calls anthropic/y" in ran.err
    assert "--offline" not in ran.err and "hint: add [providers.anthropic] with its base_url to admiss.toml" in ran.err
