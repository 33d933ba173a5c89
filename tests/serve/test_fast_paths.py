"""The gateway's fast paths decide as the slow paths they stand in for (differential tests):
a rung whose gates never read the prompt is given none, and a conversation's mapping runs
while the rung's model is called, not before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import admiss
from admiss.gates.base import Candidate
from admiss.report.json import chain_dict
from admiss.serve.calls import PROMPTLESS_GATES, reads_prompt, transcript
from admiss.serve.conversation import Conversation, conversation_trace
from agentkit import REFUND_RULES

RUBRIC = REFUND_RULES + """
CHAIN inline {
  RUNG cheap {
    GATE non_empty
    GATE json_valid
    GATE schema TOOL "issue_refund" FILE "refund.schema.json"
    GATE tool_calls TOOL "lookup_order", "issue_refund"
    GATE admissibility refund_issued
  }
}
CHAIN judged {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty
    GATE judge MODEL "fake/judge" THRESHOLD 0.7 RUBRIC "Is it right?"
  }
}
"""
SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}


@pytest.fixture(scope="module")
def router(tmp_path_factory) -> admiss.Router:
    folder: Path = tmp_path_factory.mktemp("fast")
    (folder / "r.rubric").write_text(RUBRIC)
    (folder / "refund.schema.json").write_text(json.dumps(SCHEMA))
    (folder / "admiss.toml").write_text('[providers.fake]\nbase_url = "http://127.0.0.1:9/v1"\n')
    return admiss.Router(folder / "r.rubric", config=folder / "admiss.toml", chain="inline", calls_rungs=False)


def test_only_rungs_of_promptless_gates_go_without_a_prompt(router, tmp_path):
    assert not reads_prompt(router.chain.rungs[0])
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "refund.schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "admiss.toml").write_text('[providers.fake]\nbase_url = "http://127.0.0.1:9/v1"\n')
    judged = admiss.Router(tmp_path / "r.rubric", config=tmp_path / "admiss.toml", chain="judged")
    assert reads_prompt(judged.chain.rungs[0])  # a judge reads the task it grades against
    assert {g.ir.kind for g in router.chain.rungs[0].gates} == PROMPTLESS_GATES


texts = st.text(st.characters(codec="utf-8"), max_size=30)
json_texts = st.recursive(st.none() | st.booleans() | st.integers() | texts,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                          max_leaves=6).map(json.dumps)
arguments = json_texts | texts | st.just('{"order": "A1"}') | st.just('{"order": 7}')
tool_calls = st.lists(st.builds(lambda i, name, args: {"id": f"call_{i}", "type": "function",
                                                       "function": {"name": name, "arguments": args}},
                                st.integers(0, 99), st.sampled_from(["issue_refund", "lookup_order", "rm_rf"]),
                                arguments), max_size=3)
results = json_texts | texts | st.just('{"status": "refunded"}') | st.just('{"status": "error", "message": "no"}')


def conversation_of(calls: list[dict], answers: list[str]) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "Refund order A1."}]
    unique = list({c["id"]: c for c in calls}.values())
    if unique:
        messages.append({"role": "assistant", "content": None, "tool_calls": unique})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": a} for c, a in zip(unique, answers)]
    return messages


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=st.none() | texts | json_texts, proposed=tool_calls, earlier=tool_calls,
       answers=st.lists(results, max_size=3))
def test_promptless_gates_decide_the_same_without_the_prompt(router, output, proposed, earlier, answers):
    messages = conversation_of(earlier, answers)
    conversation = Conversation(conversation_trace({"messages": messages}), router.rubric.compiled.mapping)
    rung = router.chain.rungs[0]

    def decided(prompt: str | None) -> dict:
        candidate = Candidate(output=output, model="fake/cheap", prompt=prompt, rung=rung.name,
                              evidence=conversation.evidence(rung.name, output), messages=tuple(messages),
                              tool_calls=tuple(proposed))
        report = chain_dict(asyncio.run(router.chain.agate(rung, candidate)))
        for gate in report["rungs"][0]["gates"]:
            gate.pop("duration_ms")
        return report

    assert decided(None) == decided(transcript(messages))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(earlier=tool_calls, answers=st.lists(results, max_size=3), text=texts)
def test_a_conversation_mapped_ahead_gives_what_one_mapped_on_demand_gives(router, earlier, answers, text):
    messages = [*conversation_of(earlier, answers), {"role": "assistant", "content": text}]
    mapping = router.rubric.compiled.mapping
    ahead = Conversation(conversation_trace({"messages": messages}), mapping)
    on_demand = Conversation(conversation_trace({"messages": messages}), mapping)

    async def prepared_in_the_loop() -> None:
        asyncio.get_running_loop().call_soon(ahead.prepare)  # as Router.run schedules it
        await asyncio.sleep(0)

    asyncio.run(prepared_in_the_loop())
    assert ahead._mapped is not None and on_demand._mapped is None
    assert ahead.evidence("cheap", text) == on_demand.evidence("cheap", text)
    assert ahead.summary() == on_demand.summary()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=st.none() | texts | json_texts, proposed=tool_calls, earlier=tool_calls,
       answers=st.lists(results, max_size=3))
def test_a_rung_of_cheap_gates_records_what_the_general_path_records(router, output, proposed, earlier, answers):
    from admiss.cascade import (_CANCELLED, ChainResult, TopRung, _cheap_first, _cheap_only, _in_written_order,
                                rung_record)

    messages = conversation_of(earlier, answers)
    conversation = Conversation(conversation_trace({"messages": messages}), router.rubric.compiled.mapping)
    rung = router.chain.rungs[0]
    assert not rung.costly
    candidate = Candidate(output=output, model="fake/cheap", rung=rung.name, messages=tuple(messages),
                          evidence=conversation.evidence(rung.name, output), tool_calls=tuple(proposed))
    results_by_gate, failed = _cheap_first(rung, candidate)

    def reported(records: list) -> dict:  # as the receipt has them (a property's result compares so)
        report = chain_dict(ChainResult("inline", None, [rung_record(rung, candidate, 0.0, records, last=True)],
                                        TopRung(rung.name, None, None)))
        for gate in report["rungs"][0]["gates"]:
            gate.pop("duration_ms")
        return report

    assert reported(_cheap_only(rung, candidate)) == reported(
        _in_written_order(rung, results_by_gate, failed or _CANCELLED))


@given(st.lists(st.builds(lambda kind, label, named: {"kind": kind, "source_label": label, "detail": {},
                                                      **({} if named is None else {"property": named})},
                          st.sampled_from(["tool_call", "final_answer"]), texts,
                          st.none() | st.sampled_from(["refund_issued", "other"])), max_size=8),
       st.sampled_from(["refund_issued", "other"]))
def test_offered_rows_are_the_rows_offered(items, name):
    from admiss.compiler import offered, offered_rows, rows_of

    assert offered_rows(items, name) == offered(rows_of(items), name)
