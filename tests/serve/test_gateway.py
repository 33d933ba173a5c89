"""admiss serve as a real process, driven with the official openai client."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from gatewaykit import GOOD, KEY, MAX_REQUEST_BYTES, PROVIDER_KEY, prompt, upstream_calls


def ask(gateway, chain: str, script: dict, **params):
    marker, text = prompt(script)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model=chain, messages=[{"role": "user", "content": text}], **params)
    return marker, raw.headers, raw.parse()


def test_a_passing_cheap_rung_is_served_and_the_top_rung_never_called(gateway, upstream):
    marker, headers, reply = ask(gateway, "json", {"cheap": GOOD, "strong": '{"answer": "strong"}'})
    assert reply.choices[0].message.content == GOOD
    assert reply.model == "fake/cheap"
    assert upstream_calls(upstream, marker) == ["cheap"]
    admiss_part = reply.model_extra["admiss"]
    assert admiss_part["served_rung"] == "cheap" and admiss_part["outcome"] == "served"
    assert headers["x-admiss-receipt-id"] == admiss_part["receipt_id"]
    # 100 prompt and 20 completion tokens at $1 and $2 per million.
    assert admiss_part["model_cost_usd"] == pytest.approx(100e-6 + 40e-6)
    assert reply.usage.prompt_tokens == 100 and reply.usage.completion_tokens == 20


def test_rung_settings_and_request_fields_reach_the_model(gateway, upstream):
    marker, _, _ = ask(gateway, "json", {"cheap": GOOD}, seed=7, max_tokens=32)
    [sent] = [r.body for r in upstream.requests if marker in json.dumps(r.body)]
    assert sent["messages"][0] == {"role": "system", "content": "Reply with one JSON object."}
    assert sent["temperature"] == 0.25  # from [rungs.json.cheap]
    assert sent["max_tokens"] == 32  # the request's own value wins over the rung's 64
    assert sent["seed"] == 7
    assert upstream.requests[-1].headers["authorization"] == f"Bearer {PROVIDER_KEY}"


def test_a_failing_rung_escalates_and_the_receipt_says_so(gateway, upstream):
    marker, headers, reply = ask(gateway, "json", {"cheap": "not json", "strong": GOOD})
    assert reply.choices[0].message.content == GOOD and reply.model == "fake/strong"
    assert upstream_calls(upstream, marker) == ["cheap", "strong"]
    receipt = gateway.client().get(f"/receipts/{headers['x-admiss-receipt-id']}", cast_to=httpx.Response).json()
    chain = receipt["chain"]
    assert [(r["rung"], r["outcome"]) for r in chain["rungs"]] == [("cheap", "escalated"), ("strong", "served")]
    assert [u["purpose"] for u in receipt["usage"]] == ["rung", "rung"]
    assert chain["model_cost_usd"] == pytest.approx(140e-6 + 100 * 10e-6 + 20 * 20e-6)
    assert set(receipt["latency_ms"]) == {"cheap", "strong"}
    assert receipt["top_rung"] == {"rung": "strong", "model": "fake/strong"}
    stored = gateway.store().get(receipt["id"])
    assert stored == receipt


def test_an_exhausted_chain_serves_nothing_and_returns_its_receipt_id(gateway, upstream):
    marker, text = prompt({"cheap": "not json", "strong": "still not json"})
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    error = caught.value.body
    assert error["code"] == "chain_exhausted"
    assert "not json" not in json.dumps(error)
    assert caught.value.response.headers["x-admiss-receipt-id"] == error["receipt_id"]
    receipt = gateway.store().get(error["receipt_id"])
    assert receipt["chain"]["served"] is None
    assert [r["outcome"] for r in receipt["chain"]["rungs"]] == ["escalated", "exhausted"]
    assert upstream_calls(upstream, marker) == ["cheap", "strong"]


def test_streaming_sends_the_verified_output_in_chunks(gateway, upstream):
    marker, text = prompt({"cheap": "not json", "strong": '{"answer": "a longer verified reply"}'})
    stream = gateway.client().chat.completions.create(
        model="json", messages=[{"role": "user", "content": text}], stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == '{"answer": "a longer verified reply"}'
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert chunks[-1].usage.total_tokens == 240
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals[0].model_extra["admiss"]["served_rung"] == "strong"
    assert upstream_calls(upstream, marker) == ["cheap", "strong"]


def test_an_exhausted_stream_gets_the_error_and_no_token(gateway):
    _, text = prompt({"cheap": "nope", "strong": "nope either"})
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        list(gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}],
                                                      stream=True))
    assert "nope" not in caught.value.response.text
    assert gateway.store().get(caught.value.body["receipt_id"]) is not None


def test_the_judge_passes_or_escalates_and_is_priced_as_gate_cost(gateway, upstream):
    good = json.dumps({"failure_hypotheses": ["may be wrong"], "evidence": ["checked"], "rationale": "fine",
                       "score": 0.9})
    bad = json.dumps({"failure_hypotheses": ["may be wrong"], "evidence": ["it is"], "rationale": "wrong",
                      "score": 0.2})
    marker, _, reply = ask(gateway, "judged", {"cheap": "Paris", "judge": good, "strong": "Lyon"})
    assert reply.choices[0].message.content == "Paris"
    assert upstream_calls(upstream, marker) == ["cheap", "judge"]
    receipt = gateway.store().get(reply.model_extra["admiss"]["receipt_id"])
    assert [(u["model"], u["purpose"]) for u in receipt["usage"]] == [("fake/cheap", "rung"), ("fake/judge", "judge")]
    assert receipt["chain"]["gate_cost_usd"] == pytest.approx(120 * 5e-6)

    marker, _, reply = ask(gateway, "judged", {"cheap": "Paris", "judge": bad, "strong": "Lyon"})
    assert reply.choices[0].message.content == "Lyon"
    assert upstream_calls(upstream, marker) == ["cheap", "judge", "strong"]


def test_consistency_samples_the_same_request_from_the_same_provider(gateway, upstream):
    marker, _, reply = ask(gateway, "consistent", {"cheap": "Paris", "strong": "Lyon"})
    assert reply.choices[0].message.content == "Paris"
    assert upstream_calls(upstream, marker) == ["cheap"] * 4  # the answer and K=3 samples
    receipt = gateway.store().get(reply.model_extra["admiss"]["receipt_id"])
    assert [u["purpose"] for u in receipt["usage"]] == ["rung", "consistency", "consistency", "consistency"]
    assert receipt["chain"]["gate_cost_usd"] == pytest.approx(3 * 140e-6)

    marker, _, reply = ask(gateway, "consistent", {"cheap": {"text": "Paris", "vary": True}, "strong": "Lyon"})
    assert reply.choices[0].message.content == "Lyon"
    assert upstream_calls(upstream, marker) == ["cheap"] * 4 + ["strong"]


@pytest.mark.parametrize("key", ["wrong-key", f"{KEY}x", KEY[:-1]])
def test_a_bad_key_gets_401_and_calls_nothing(gateway, upstream, key):
    marker, text = prompt({"cheap": GOOD})
    receipts = sum(gateway.store().counts().values())
    with pytest.raises(openai.AuthenticationError):
        gateway.client(key=key).chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    assert upstream_calls(upstream, marker) == []
    assert sum(gateway.store().counts().values()) == receipts


def test_a_missing_key_gets_401_and_calls_nothing(gateway, upstream):
    marker, text = prompt({"cheap": GOOD})
    body = {"model": "json", "messages": [{"role": "user", "content": text}]}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json=body)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(f"{gateway.url}/v1/models").status_code == 401
    assert httpx.get(f"{gateway.url}/v1/models", headers={"Authorization": "Basic " + KEY}).status_code == 401
    assert upstream_calls(upstream, marker) == []


def test_either_configured_key_is_accepted_and_models_lists_the_chains(gateway):
    models = gateway.client(key="other-key").models.list()
    assert sorted(m.id for m in models.data) == ["consistent", "json", "judged", "slowgate", "tested"]


def test_bad_requests_are_400s_before_any_model_call(gateway, upstream):
    marker, text = prompt({"cheap": GOOD})
    client = gateway.client()
    with pytest.raises(openai.BadRequestError, match="n must be 1"):
        client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}], n=2)
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="json", messages=[])
    with pytest.raises(openai.BadRequestError, match="temperature must be a number from 0 to 2"):
        client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}], temperature=7)
    # Tools pass to the rungs now (tests/serve/test_agents.py); a malformed one is refused by name.
    with pytest.raises(openai.BadRequestError, match=r"tools\[0\]\.function\.name"):
        client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}],
                                       tools=[{"type": "function", "function": {"name": "no spaces"}}])
    with pytest.raises(openai.BadRequestError, match="unsupported parameter: functions"):
        client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}],
                                       extra_body={"functions": []})
    # Unknown fields inside messages are refused as unknown top-level fields are.
    with pytest.raises(openai.BadRequestError, match=r"messages\[0\]\.audio: unsupported field"):
        client.chat.completions.create(model="json", messages=[{"role": "user", "content": text, "audio": {}}])
    # A field named like a parameter of Router.complete is a field like any other: refused.
    response = httpx.post(f"{gateway.url}/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                          json={"model": "json", "messages": [{"role": "user", "content": text}], "self": 1})
    assert response.status_code == 400 and response.json()["error"]["param"] == "self"
    for body in ({"model": ["json"], "messages": []}, {"model": "json", "messages": [{"role": ["user"]}]}, [1, 2]):
        response = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
        assert response.status_code in (400, 404) and "error" in response.json()
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-chain", messages=[{"role": "user", "content": text}])
    assert upstream_calls(upstream, marker) == []


def test_health_and_readiness(gateway):
    assert httpx.get(f"{gateway.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{gateway.url}/readyz").json() == {"status": "ready", "problems": []}


def test_the_provider_key_never_appears_in_responses_receipts_or_logs(gateway):
    _, headers, _ = ask(gateway, "json", {"cheap": {"status": 400, "echo": "authorization"}, "strong": GOOD})
    receipt = gateway.store().get(headers["x-admiss-receipt-id"])
    assert "scripted 400 Bearer ***" in receipt["model_errors"][0]["error"]
    exported = "\n".join(json.dumps(r) for r in gateway.store().iter_since())
    assert PROVIDER_KEY not in exported
    assert PROVIDER_KEY not in gateway.log.read_text()
    assert PROVIDER_KEY not in httpx.get(f"{gateway.url}/metrics").text


def test_a_lone_surrogate_escape_in_a_message_is_served_and_a_body_that_is_not_json_is_a_400(gateway, upstream):
    # JSON allows the escape "\ud800" (orjson alone refuses it): the request still goes through.
    marker, text = prompt({"cheap": GOOD}, text="What is \ud800 the answer?")
    body = json.dumps({"model": "json", "messages": [{"role": "user", "content": text}]})
    assert "\\ud800" in body
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", content=body, headers=headers)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == GOOD
    [sent] = [r.body for r in upstream.requests if marker in json.dumps(r.body)]
    assert "\ud800" in sent["messages"][-1]["content"]
    broken = httpx.post(f"{gateway.url}/v1/chat/completions", content=b'{"model": "json", "messages": [', headers=headers)
    assert broken.status_code == 400 and broken.json()["error"]["message"] == "the request body is not JSON"


@pytest.mark.parametrize(("body", "where"), [
    ('{"model": "json", "messages": [{"role": "user", "content": %s}], "temperature": 1, "temperature": 7}',
     "temperature"),
    ('{"model": "json", "messages": [{"role": "user", "content": %s, "content": "x"}]}', "messages[0].content"),
    ('{"model": "nope", "model": "json", "messages": [{"role": "user", "content": %s}]}', "model"),
    ('{"model": "json", "messages": [{"role": "user", "content": %s}], "stream": true, "\\u0073tream": false}',
     "stream"),
    # The repeat is refused before what else the body gets wrong: an unsupported field, a
    # bad message, a chain that does not exist, a body that is no object.
    ('{"model": "json", "messages": [{"role": "user", "content": %s}], "temperature": 1, "temperature": 7, '
     '"best_of": 2}', "temperature"),
    ('{"model": "json", "messages": [{"role": "user", "content": %s, "content": "x"}, {"role": "robot"}]}',
     "messages[0].content"),
    ('{"model": "nope", "messages": [{"role": "user", "content": %s}], "temperature": 1, "temperature": 7}',
     "temperature"),
    ('[{"model": "json", "messages": [{"role": "user", "content": %s}], "model": "json"}]', "$[0].model"),
    # Deep in a message the gateway reads and forwards, over either route.
    ('{"model": "json", "messages": [{"role": "user", "content": %s}, {"role": "assistant", "content": null, '
     '"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}", "name": "g"}}]}, '
     '{"role": "tool", "tool_call_id": "c1", "content": "ok"}]}', "messages[1].tool_calls[0].function.name"),
    ('/v1/messages {"model": "json", "max_tokens": 50, "messages": [{"role": "user", "content": %s}, '
     '{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1, "a": 2}}]}, '
     '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}',
     "messages[1].content[0].input.a"),
])
def test_a_key_given_twice_in_a_request_body_is_a_400_before_any_model_call(gateway, upstream, body, where):
    marker, text = prompt({"cheap": GOOD})
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    path, body = body.split(" ", 1) if body.startswith("/") else ("/v1/chat/completions", body)
    response = httpx.post(f"{gateway.url}{path}", content=body % json.dumps(text), headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["message"] == (f"the request body gives a key twice in one object, at {where}: "
                                "refused rather than read as either value")
    assert error["param"] == where
    assert upstream_calls(upstream, marker) == []


def test_a_body_sent_in_pieces_is_read_whole_and_other_methods_on_the_chat_path_are_405(gateway, upstream):
    # A large request arrives as many ASGI body messages: the chat route joins them.
    marker, text = prompt({"cheap": GOOD}, text="What is the answer? " + "context " * 100_000)

    def pieces():
        body = json.dumps({"model": "json", "messages": [{"role": "user", "content": text}]}).encode()
        for start in range(0, len(body), 65536):
            yield body[start:start + 65536]

    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", content=pieces(), headers=headers, timeout=30)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == GOOD
    [sent] = [r.body for r in upstream.requests if marker in json.dumps(r.body)]
    assert sent["messages"][-1]["content"] == text
    for method in ("GET", "PUT"):
        assert httpx.request(method, f"{gateway.url}/v1/chat/completions", headers=headers).status_code == 405


def test_a_body_past_max_request_bytes_is_a_413_before_any_model_call(gateway, upstream):
    marker, text = prompt({"cheap": GOOD}, text="What is the answer? " + "x" * MAX_REQUEST_BYTES)
    body = json.dumps({"model": "json", "messages": [{"role": "user", "content": text}]}).encode()
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    said = httpx.post(f"{gateway.url}/v1/chat/completions", content=body, headers=headers, timeout=30)
    # Without a content-length (chunked), the count of what came in stops it.
    unsaid = httpx.post(f"{gateway.url}/v1/chat/completions", content=iter([body[:65536], body[65536:]]),
                        headers=headers, timeout=30)
    for response in (said, unsaid):
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "request_too_large"
    assert upstream_calls(upstream, marker) == []
    assert gateway.metrics()['admiss_rejected_requests_total{reason="too_large"}'] == 2
