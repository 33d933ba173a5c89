"""The gateway's own secrets (the provider key, a provider URL's user-info) never reach a
client, a receipt, a report or a log, whatever an upstream echoes (docs/security.md).
A real ``admiss serve`` process and a real upstream on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys

import httpx
import openai
import pytest

from gatewaykit import GOOD, KEY, PROVIDER_KEY, Gateway, prompt, upstream_calls

PASSWORD = "url-pass-0123456789"
USER = "svc-account"


def _secret_parts() -> list[str]:
    """The secrets and their first eight characters: a secret cut short must not keep its start."""
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # as Basic auth sends it
    secrets = [PROVIDER_KEY, PASSWORD, f"{USER}:{PASSWORD}", basic]
    return secrets + [secret[:8] for secret in secrets]


def _with_user_info(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


@pytest.fixture(scope="module")
def secret_gateway(tmp_path_factory, upstream):
    # One for the module: each test reads only its own receipts; the log a test checks is
    # the whole module's so far, which holds no secret either.
    gateway = Gateway(tmp_path_factory.mktemp("secret"), upstream, base_url=_with_user_info(upstream.url))
    yield gateway
    assert gateway.stop() == 0, gateway.log.read_text()


@pytest.mark.parametrize("pad", [0, 150, 170, 185])  # the key before, across and after the cut
def test_echoed_credentials_never_reach_a_receipt_its_read_or_the_log(secret_gateway, pad):
    gateway = secret_gateway
    # cheap echoes what the gateway sent as Host (where a URL's user-info can end up), strong
    # the Authorization header, each padded so the secret straddles the 200-character cut.
    _, text = prompt({"cheap": {"status": 400, "echo": "host", "pad": pad},
                      "strong": {"status": 400, "echo": "authorization", "pad": pad}})
    with pytest.raises(openai.UnprocessableEntityError) as exhausted:
        gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    receipt_id = exhausted.value.body["receipt_id"]
    read = httpx.get(f"{gateway.url}/v1/receipts/{receipt_id}", headers={"authorization": f"Bearer {KEY}"})
    errors = [e["error"] for e in read.json()["model_errors"]]
    assert len(errors) == 2 and all("scripted 400" in error for error in errors)
    shown = [read.text, json.dumps(gateway.store().get(receipt_id)), json.dumps(exhausted.value.body),
             gateway.log.read_text()]
    for part in _secret_parts():
        assert not any(part in text for text in shown), part


def test_a_200_completion_echoing_the_key_is_never_served(gateway, upstream):
    # JSON, so the cheap rung's gates would pass it: only the echo may stop it.
    marker, text = prompt({"cheap": {"text": '{"key": "ECHO"}', "echo_in_text": "authorization"}, "strong": GOOD})
    for stream in (False, True):
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="json", messages=[{"role": "user", "content": text}], stream=stream).http_response
        served, headers = raw.read().decode(), dict(raw.headers)
        assert PROVIDER_KEY not in served and PROVIDER_KEY not in json.dumps(headers)
        assert '"served_rung":"strong"' in served  # the strong rung's answer, not the echo
        receipt = gateway.store().get(headers["x-admiss-receipt-id"])
        assert receipt["chain"]["served"] == "strong"
        [error] = receipt["model_errors"]
        assert error["rung"] == "cheap" and "credentials" in error["error"]
        # The refused reply was billed: its call is on the receipt, as the rung's.
        assert [(u["rung"], u["purpose"]) for u in receipt["usage"]] == [("cheap", "rung"), ("strong", "rung")]
        assert PROVIDER_KEY not in json.dumps(receipt)
    assert upstream_calls(upstream, marker) == ["cheap", "strong"] * 2


def test_a_judge_reply_echoing_the_key_is_refused_and_never_quoted(gateway, upstream):
    # The judge's reply would pass (a score of 0.9), but it quotes the key in its rationale.
    graded = json.dumps({"failure_hypotheses": ["a wrong total"], "evidence": ["the sum holds"], "rationale": "ECHO",
                         "score": 0.9})
    _, text = prompt({"cheap": GOOD, "judge": {"text": graded, "echo_in_text": "authorization"}, "strong": GOOD})
    reply = gateway.client().chat.completions.create(model="judged", messages=[{"role": "user", "content": text}])
    receipt = gateway.store().get(reply.model_extra["admiss"]["receipt_id"])
    assert receipt["chain"]["served"] == "strong"
    judge = receipt["chain"]["rungs"][0]["gates"][1]
    assert judge["gate"] == "judge" and "repeats the credentials" in judge["reason"]
    assert PROVIDER_KEY not in json.dumps(receipt)


def test_check_live_reports_no_echoed_credential(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text('CHAIN c {\n  RUNG cheap MODEL "fake/cheap" { GATE non_empty }\n'
                                       '  RUNG strong MODEL "fake/strong" { GATE non_empty }\n}\n')
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{_with_user_info(upstream.url)}"\n'
                                          'api_key_env = "FAKE_PROVIDER_KEY"\n')
    _, text = prompt({"cheap": {"status": 400, "echo": "authorization", "pad": 170},
                      "strong": {"status": 400, "echo": "authorization"}})
    (tmp_path / "b.json").write_text(json.dumps({"prompt": text, "evidence": []}))
    env = {"FAKE_PROVIDER_KEY": PROVIDER_KEY, "PATH": "/usr/bin:/bin"}
    ran = subprocess.run([sys.executable, "-m", "admiss", "check", "--live", "--format", "json", "--rubric", "r.rubric",
                          "b.json"], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert ran.returncode == 1, ran.stderr
    reasons = [g["reason"] for rung in json.loads(ran.stdout)["chain"]["rungs"] for g in rung["gates"]]
    assert all("HTTP 400" in reason for reason in reasons)
    for part in _secret_parts():
        assert part not in ran.stdout + ran.stderr, part


@pytest.mark.parametrize("table", [
    '[serve]\napi_keys = ["sk-client-secret-0123", 5]\n',  # a type error on the keys' line
    '[serve]\napi_keys = [\n  "sk-client-secret-0123",\n  "",\n]\n',  # an empty key, over lines
    '[serve]\napi_keys = ["sk-client-secret-0123" "x"]\n',  # a TOML syntax error on that line
    '[serve]\napi_keys = "sk-client-secret-0123"\n',  # not an array
])
def test_config_errors_never_quote_an_api_key(tmp_path, table):
    (tmp_path / "r.rubric").write_text('CHAIN c { RUNG a MODEL "fake/m" { GATE non_empty } }\n')
    (tmp_path / "admiss.toml").write_text('[providers.fake]\nbase_url = "http://127.0.0.1:1/v1"\n' + table)
    ran = subprocess.run([sys.executable, "-m", "admiss", "serve", "r.rubric"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert ran.returncode == 2 and "admiss.toml:" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr
    assert "client-secret" not in ran.stderr, ran.stderr


def test_a_receipt_read_masks_a_key_stored_unmasked(secret_gateway):
    # As a store shared with an older gateway could hold it (this module's gateway, not the
    # session's: a row written behind the gateway's back would put its counters and its store
    # apart, and no test here compares them).
    gateway = secret_gateway
    row = {"id": "rcpt_old_gateway", "created_at": "2026-11-30T00:00:00.000Z",
           "chain": {"name": "json", "served": None, "model_cost_usd": 0.0, "gate_cost_usd": 0.0},
           "model_errors": [{"rung": "cheap", "error": f"HTTP 401: bad key Bearer {PROVIDER_KEY}"}]}
    db = sqlite3.connect(gateway.store_path)
    with db:
        db.execute("INSERT INTO receipts VALUES (?, ?, 'json', NULL, 'exhausted', 0, 0, ?)",
                   (row["id"], row["created_at"], json.dumps(row)))
    db.close()
    read = httpx.get(f"{gateway.url}/v1/receipts/{row['id']}", headers={"authorization": f"Bearer {KEY}"})
    assert read.json()["model_errors"][0]["error"] == "HTTP 401: bad key Bearer ***"
