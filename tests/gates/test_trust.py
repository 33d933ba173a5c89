"""Trust boundaries of the gates: maker ≠ checker holds when the bundle omits the model, and
no reason or error shows a URL's user-info or a configured key's value. A real chat server
on 127.0.0.1, real rubric files, real programs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from chat_server import Reply

import admiss
from admiss.errors import InputError

KEY = "sk-live-0123456789abcdef"
PASSWORD = "hunter2-basic-auth"


def _chain(tmp_path, rungs: str, toml: str = "") -> admiss.Rubric:
    (tmp_path / "admiss.toml").write_text(toml)
    (tmp_path / "r.rubric").write_text(f"CHAIN c {{\n{rungs}\n}}\n")
    return admiss.load(tmp_path / "r.rubric")


def _gates(report) -> list[dict]:
    return [g for r in report.to_dict()["chain"]["rungs"] for g in r["gates"]]


def _provider(url: str, **extra: str) -> str:
    lines = [f'base_url = "{url}"', "max_retries = 0"] + [f'{k} = "{v}"' for k, v in extra.items()]
    return "[providers.local]\n" + "\n".join(lines) + "\n"


def test_without_the_candidates_model_the_rungs_model_is_the_maker(tmp_path, chat_server):
    rubric = _chain(tmp_path, '  RUNG strong MODEL "local/judge" {\n'
                              '    GATE judge MODEL "local/JUDGE" RUBRIC "Right?" ON ABSTAIN fail_closed\n  }',
                    _provider(chat_server.url))
    report = rubric.check({"candidates": [{"rung": "strong", "output": "42"}]})
    [gate] = _gates(report)
    assert (gate["verdict"], gate["effective"], report.verdict) == ("abstain", "fail", "fail")
    assert gate["reason"].startswith("maker = checker: judge local/JUDGE would grade its own output (local/judge)")
    assert chat_server.requests == []


def test_a_judge_abstains_when_the_maker_is_unknown(tmp_path, chat_server):
    rubric = _chain(tmp_path, '  GATE judge MODEL "local/judge" RUBRIC "Right?" ON ABSTAIN fail_closed',
                    _provider(chat_server.url))
    report = rubric.check({"output": "42"})
    [gate] = _gates(report)
    assert (gate["verdict"], gate["effective"], gate["fault"], report.verdict) == ("abstain", "fail", None, "fail")
    assert gate["reason"].startswith("maker unknown")
    assert chat_server.requests == []
    # With the maker named, the same judge is asked.
    assert rubric.check({"output": "42", "model": "local/maker"}).verdict == "pass"
    assert len(chat_server.requests) == 1


def test_a_key_a_server_echoes_is_masked_in_the_reason(tmp_path, chat_server, monkeypatch):
    monkeypatch.setenv("LOCAL_KEY", KEY)
    chat_server.default = Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    rubric = _chain(tmp_path, '  GATE judge MODEL "local/judge" RUBRIC "Right?"',
                    _provider(chat_server.url, api_key_env="LOCAL_KEY"))
    [gate] = _gates(rubric.check({"output": "42", "model": "local/maker"}))
    assert chat_server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent, and echoed
    assert KEY not in gate["reason"]
    assert "Incorrect API key provided: ***" in gate["reason"]


def test_url_user_info_is_masked_in_the_reason(tmp_path):
    unreachable = f"http://admin:{PASSWORD}@127.0.0.1:1/v1"  # port 1: nothing listens
    rubric = _chain(tmp_path, '  GATE judge MODEL "local/judge" RUBRIC "Right?"', _provider(unreachable))
    [gate] = _gates(rubric.check({"output": "42", "model": "local/maker"}))
    assert "cannot connect to http://***@127.0.0.1:1/v1/chat/completions" in gate["reason"]
    assert PASSWORD not in gate["reason"] and "admin" not in gate["reason"]


def test_a_gate_program_quoting_secrets_on_stderr_is_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_KEY", KEY)
    script = tmp_path / "leak.py"
    script.write_text(f"import sys\nsys.stderr.write('db https://u:{PASSWORD}@db.internal key {KEY}')\nsys.exit(3)\n")
    cmd = ", ".join(json.dumps(a) for a in (sys.executable, str(script)))
    rubric = _chain(tmp_path, f"  GATE subprocess CMD [{cmd}]",
                    _provider("http://127.0.0.1:1/v1", api_key_env="LOCAL_KEY"))
    [gate] = _gates(rubric.check({"output": "42"}))
    assert gate["reason"] == "program exited with status 3: db https://***@db.internal key ***"


def test_an_error_quoting_a_url_masks_its_user_info(tmp_path):
    toml = tmp_path / "admiss.toml"
    toml.write_text(f'[providers.local]\nbase_url = "ftp://admin:{PASSWORD}@files.example/v1"\n')
    (tmp_path / "r.rubric").write_text('CHAIN c {\n  GATE judge MODEL "local/judge" RUBRIC "Right?"\n}\n')
    (tmp_path / "b.json").write_text(json.dumps({"output": "42", "model": "local/maker"}))
    done = subprocess.run([sys.executable, "-m", "admiss", "check", "b.json", "-r", "r.rubric"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "base_url must start with http:// or https://, not 'ftp://***@files.example/v1'" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
    with pytest.raises(InputError) as caught:
        admiss.load(tmp_path / "r.rubric").check({"output": "42", "model": "local/maker"})
    assert PASSWORD not in json.dumps([d.to_dict() for d in caught.value.diagnostics])
