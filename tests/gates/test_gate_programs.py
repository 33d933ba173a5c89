"""Gate programs get only what they need, give their verdict when they exit, and never
outlive admiss: real programs, real `admiss check` processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gatekit import PYTHON, SCRIPTS, gate, kill_leftovers, recorded_pids, run_gate
from processes import gone_within

from admiss.config import Config, GateDefaults, ProviderConfig, read_config
from admiss.errors import InputError
from admiss.gates import subprocess as subprocess_gate
from admiss.gates.base import PASS, Candidate, GateContext

SECRETS = {"MY_PROVIDER_KEY": "sk-provider-secret-1", "AWS_SECRET_ACCESS_KEY": "aws-secret-2",
           "GITHUB_TOKEN": "ghp-secret-3", "DATABASE_URL": "postgres://u:pw-secret-4@db/x"}


def _environment_seen(tmp_path: Path, config: Config) -> dict[str, str]:
    ctx = GateContext(tmp_path, config)
    check = subprocess_gate.build(gate("subprocess", cmd=(PYTHON, str(SCRIPTS / "echo.py"))), ctx)
    return json.loads(run_gate(check, Candidate(output="x"), ctx).reason)["env"]


def test_a_gate_program_gets_the_allow_list_and_no_secret(tmp_path, monkeypatch):
    for name, value in {**SECRETS, "LC_ALL": "C.UTF-8", "TZ": "UTC"}.items():
        monkeypatch.setenv(name, value)
    config = Config(providers={"p": ProviderConfig("p", "http://127.0.0.1:9/v1", "MY_PROVIDER_KEY")})
    env = _environment_seen(tmp_path, config)
    assert not set(SECRETS) & set(env)
    assert not any(secret in value for value in env.values() for secret in SECRETS.values())
    assert (env["PATH"], env["LC_ALL"], env["TZ"]) == (os.environ["PATH"], "C.UTF-8", "UTC")
    assert all(name in subprocess_gate.BASE_ENV or name.startswith("LC_") for name in env), sorted(env)


def test_pass_env_adds_what_the_operator_names_but_never_a_provider_key(tmp_path, monkeypatch):
    for name, value in {**SECRETS, "PYTHONPATH": "/opt/project"}.items():
        monkeypatch.setenv(name, value)
    config = Config(providers={"p": ProviderConfig("p", "http://127.0.0.1:9/v1", "MY_PROVIDER_KEY")},
                    gates=GateDefaults(pass_env=("PYTHONPATH", "MY_PROVIDER_KEY")))
    env = _environment_seen(tmp_path, config)
    assert env["PYTHONPATH"] == "/opt/project"
    assert "MY_PROVIDER_KEY" not in env


def test_admiss_toml_naming_a_provider_key_in_pass_env_is_refused_where_it_is_written(tmp_path):
    toml = tmp_path / "admiss.toml"
    toml.write_text('[providers.openai]\nbase_url = "https://example.invalid/v1"\napi_key_env = "OPENAI_API_KEY"\n\n'
                    '[gates]\npass_env = ["PYTHONPATH", "OPENAI_API_KEY"]\n')
    with pytest.raises(InputError) as caught:
        read_config(toml)
    [diagnostic] = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.span.line) == ("E161", 6)
    assert "gates.pass_env names OPENAI_API_KEY, the api_key_env of [providers.openai]" in diagnostic.message


@pytest.mark.parametrize("value", ['["BAD NAME"]', '"PATH"', "[1]"])
def test_pass_env_must_be_a_list_of_variable_names(tmp_path, value):
    toml = tmp_path / "admiss.toml"
    toml.write_text(f"[gates]\npass_env = {value}\n")
    with pytest.raises(InputError, match="pass_env"):
        read_config(toml)


def test_the_verdict_counts_when_the_program_exits_though_a_child_holds_stdout(tmp_path):
    pidfile = tmp_path / "pids.json"
    timeout_s = 60.0
    g = gate("subprocess", cmd=(PYTHON, str(SCRIPTS / "holds_stdout.py"), str(pidfile)), timeout_s=timeout_s)
    ctx = GateContext(tmp_path)
    result = run_gate(subprocess_gate.build(g, ctx), Candidate(output="x"), ctx)
    pids = list(recorded_pids(pidfile).values())
    try:
        # Not a timeout: the verdict came when the program exited, before its TIMEOUT.
        assert (result.verdict, result.fault, result.reason) == (PASS, None, "done; my child keeps stdout open")
        assert gone_within(pids, 5)  # and the child holding stdout was killed with its group
    finally:
        kill_leftovers(pids)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_admiss_check_takes_every_gate_process_group_with_it(tmp_path, signum):
    pidfile = tmp_path / "pids.json"
    cmd = ", ".join(json.dumps(a) for a in (PYTHON, str(SCRIPTS / "hang.py"), str(pidfile)))
    (tmp_path / "r.rubric").write_text(f"CHAIN c {{\n  GATE subprocess CMD [{cmd}] TIMEOUT 100s\n}}\n")
    (tmp_path / "b.json").write_text(json.dumps({"output": "x"}))
    admiss = subprocess.Popen([sys.executable, "-m", "admiss", "check", "b.json", "-r", "r.rubric"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = list(recorded_pids(pidfile, seconds=60).values())
        admiss.send_signal(signum)
        _, stderr = admiss.communicate(timeout=60)
        assert admiss.returncode == (143 if signum == signal.SIGTERM else 1), stderr
        assert "Traceback" not in stderr
        assert gone_within(pids, 10), [p for p in pids if Path(f"/proc/{p}").exists()]
    finally:
        admiss.kill()
        kill_leftovers(pids)
