"""An upstream that reports absurd token usage: the counts are not priced, the receipt is
flagged, and ``admiss savings`` reports the store with that request unpriced. A real
``admiss serve`` process, a real upstream on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gatewaykit import GOOD, Gateway, prompt

ABSURD = 2 * 10**18  # tokens: at fake/cheap's $1 per million, $2e12


@pytest.mark.parametrize("usage", [[ABSURD, 20], [100, ABSURD]])
def test_absurd_usage_is_flagged_unpriced_and_savings_reports_the_rest(tmp_path, upstream, usage):
    gateway = Gateway(tmp_path, upstream)
    try:
        client = gateway.client()
        ids = []
        for spec in ({"text": GOOD, "usage": usage}, GOOD):
            _, text = prompt({"cheap": spec})
            reply = client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
            ids.append(reply.model_extra["admiss"]["receipt_id"])
            assert reply.usage.prompt_tokens < 10**6 and reply.usage.completion_tokens < 10**6
    finally:
        assert gateway.stop() == 0, gateway.log.read_text()
    store = gateway.store()
    flagged, plain = store.get(ids[0]), store.get(ids[1])
    assert flagged["flags"] == ["usage_out_of_bounds"] and plain["flags"] == []
    assert flagged["chain"]["model_cost_usd"] == 0.0
    [call] = flagged["usage"]
    assert call["usage_out_of_bounds"] is True
    assert (call["prompt_tokens"], call["completion_tokens"], call["cost_usd"]) == (None, None, 0.0)
    ran = subprocess.run([sys.executable, "-m", "admiss", "savings", "--format", "json", str(gateway.store_path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    figures = json.loads(ran.stdout)
    assert figures["requests"] == 2 and figures["priced_requests"] == 1
    assert figures["spend_usd"] < 1
    assert list(figures["unpriced_notes"]) == ["an upstream reported token usage out of bounds (the receipt is flagged)"]
