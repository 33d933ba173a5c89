"""A real ``admiss serve`` process exporting spans and gen_ai.evaluation.result events through
the real OpenTelemetry SDK and OTLP/HTTP exporter to a loopback receiver, driven by the
official openai client in front of a loopback upstream (tests/serve/gatewaykit.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "serve"))
sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from chat_server import ChatServer, scripted_by_prompt  # noqa: E402
from gatewaykit import GOOD, Gateway, prompt  # noqa: E402
from otlp_receiver import Receiver, attributes_of, events  # noqa: E402

GOOD_JUDGE = json.dumps({"failure_hypotheses": ["may be wrong"], "evidence": ["checked"], "rationale": "fine",
                         "score": 0.9})
PARENT_TRACE, PARENT_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
SERVER, CLIENT = 2, 3  # the OTLP span kinds


@pytest.fixture(scope="module")
def otlp():
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def traced(tmp_path_factory, otlp):
    upstream = ChatServer(route=scripted_by_prompt, keep_alive=True).start()
    # Short export delays, so what a request made arrives while the test waits for it.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    gw = Gateway(tmp_path_factory.mktemp("otel-gateway"), upstream, extra_env=env)
    yield gw
    assert gw.stop() == 0, gw.log.read_text()
    upstream.stop()


def spans_of(otlp: Receiver, trace_id: str) -> list:
    return [span for _, span in otlp.spans() if span.trace_id.hex() == trace_id]


def request_span(otlp: Receiver, receipt_id: str):
    found = [span for _, span in otlp.spans() if attributes_of(span).get("admiss.receipt.id") == receipt_id
             and span.kind == SERVER]
    return found[0] if found else None


def test_a_request_continues_the_callers_trace_with_rung_and_model_call_spans(traced, otlp):
    marker, text = prompt({"cheap": "not json", "strong": GOOD})
    raw = traced.client().chat.completions.with_raw_response.create(
        model="json", messages=[{"role": "user", "content": text}],
        extra_headers={"traceparent": f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"})
    reply = raw.parse()
    receipt_id = reply.model_extra["admiss"]["receipt_id"]
    assert otlp.wait_for(lambda r: request_span(r, receipt_id) is not None and len(spans_of(r, PARENT_TRACE)) >= 5)
    request = request_span(otlp, receipt_id)
    assert request.trace_id.hex() == PARENT_TRACE and request.parent_span_id.hex() == PARENT_SPAN
    attributes = attributes_of(request)
    assert attributes["gen_ai.response.id"] == reply.id
    assert (attributes["admiss.served_rung"], attributes["admiss.outcome"]) == ("strong", "served")
    assert attributes["http.response.status_code"] == 200
    spans = spans_of(otlp, PARENT_TRACE)
    rungs = {s.name: s for s in spans if s.parent_span_id == request.span_id}
    assert set(rungs) == {"admiss.rung cheap", "admiss.rung strong"}
    cheap, strong = rungs["admiss.rung cheap"], rungs["admiss.rung strong"]
    assert cheap.end_time_unix_nano <= strong.start_time_unix_nano
    assert request.start_time_unix_nano <= cheap.start_time_unix_nano
    assert strong.end_time_unix_nano <= request.end_time_unix_nano
    assert attributes_of(cheap)["admiss.rung.outcome"] == "escalated"
    # Each rung's model call: a GenAI client span under its rung, with the tokens used.
    calls = {s.parent_span_id: s for s in spans if s.kind == CLIENT}
    for rung, model in ((cheap, "cheap"), (strong, "strong")):
        call = attributes_of(calls[rung.span_id])
        assert (call["gen_ai.operation.name"], call["gen_ai.request.model"]) == ("chat", model)
        assert (call["gen_ai.usage.input_tokens"], call["gen_ai.usage.output_tokens"]) == (100, 20)
    # The gate decisions: events on their rung's span.
    decided = [(e.name, attributes_of(e)["gen_ai.evaluation.name"], attributes_of(e)["gen_ai.evaluation.score.label"])
               for e in cheap.events]
    assert decided == [("gen_ai.evaluation.result", "non_empty", "pass"),
                       ("gen_ai.evaluation.result", "json_valid", "fail")]


def test_gate_decisions_are_log_events_parented_to_their_rung(traced, otlp):
    marker, text = prompt({"cheap": "Paris", "judge": GOOD_JUDGE, "strong": "Lyon"})
    reply = traced.client().chat.completions.create(model="judged", messages=[{"role": "user", "content": text}])
    receipt_id = reply.model_extra["admiss"]["receipt_id"]

    def mine(r):
        return [e for e in events(r) if attributes_of(e).get("admiss.receipt.id") == receipt_id]

    assert otlp.wait_for(lambda r: len(mine(r)) >= 2 and request_span(r, receipt_id) is not None)
    request = request_span(otlp, receipt_id)
    (rung,) = [s for _, s in otlp.spans() if s.parent_span_id == request.span_id]
    got = {attributes_of(e)["gen_ai.evaluation.name"]: e for e in mine(otlp)}
    assert set(got) == {"non_empty", "judge"}
    judge = attributes_of(got["judge"])
    assert judge["gen_ai.evaluation.score.value"] == pytest.approx(0.9)
    assert judge["gen_ai.evaluation.score.label"] == "pass"
    assert judge["admiss.gate.on_abstain"] == "fail_closed"
    assert judge["gen_ai.response.id"] == reply.id  # the served rung's completion
    assert judge["admiss.gate.cost_usd"] > 0
    for record in got.values():
        assert (record.trace_id, record.span_id) == (rung.trace_id, rung.span_id)
    # The judge's own model call is a client span of the rung too.
    models = sorted(attributes_of(s)["gen_ai.request.model"] for _, s in otlp.spans()
                    if s.parent_span_id == rung.span_id and s.kind == CLIENT)
    assert models == ["cheap", "judge"]


def test_an_exhausted_chain_has_its_span_and_a_malformed_traceparent_starts_a_new_trace(traced, otlp):
    import openai

    marker, text = prompt({"cheap": "not json", "strong": "nor this"})
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        traced.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}],
                                                extra_headers={"traceparent": "00-zz-not-a-trace"})
    receipt_id = caught.value.body["receipt_id"]
    assert otlp.wait_for(lambda r: request_span(r, receipt_id) is not None)
    request = request_span(otlp, receipt_id)
    assert not request.parent_span_id and request.trace_id.hex() != "0" * 32
    attributes = attributes_of(request)
    assert (attributes["admiss.outcome"], attributes["http.response.status_code"]) == ("exhausted", 422)


def test_the_telemetry_table_turns_it_on_for_every_worker(tmp_path, otlp):
    upstream = ChatServer(route=scripted_by_prompt, keep_alive=True).start()
    table = f'\n[telemetry]\nendpoint = "{otlp.url}"\nservice_name = "gateway-from-toml"\n'
    gw = Gateway(tmp_path, upstream, workers=2, serve_settings=table,
                 extra_env={"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_BLRP_SCHEDULE_DELAY": "50"})
    try:
        client = gw.client()
        ids = [client.chat.completions.create(model="json", messages=[{"role": "user", "content": prompt(
            {"cheap": GOOD})[1]}]).model_extra["admiss"]["receipt_id"] for _ in range(6)]
    finally:
        assert gw.stop() == 0, gw.log.read_text()
        upstream.stop()
    # Stopped: each worker exported what it had before it exited.
    assert all(request_span(otlp, receipt_id) is not None for receipt_id in ids)
    services = {resource["service.name"] for resource, span in otlp.spans()
                if attributes_of(span).get("admiss.receipt.id") in ids}
    assert services == {"gateway-from-toml"}
