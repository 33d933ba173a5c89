"""Every fixture of the new readers, read by ``admiss import`` (a real subprocess), against
counts this test takes from the raw file in a few plain lines: the tool calls, the failed
ones, and the final answer of each run."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
PUBLIC = FIXTURES / "public"
RUBRIC = 'PROPERTY p "p" {\n  ADMIT procedurally_sound_tool_call\n  FORBID flawed_tool_call, final_answer\n}\n'
FAILURE_TEXT = "An error occurred while running the tool. Please try again."


def text_of(content):
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def agents_items(items):
    calls = [i for i in items if i.get("type") == "function_call"]
    failed = [i for i in items if i.get("type") == "function_call_output" and i["output"] == FAILURE_TEXT]
    last = items[-1]
    return [(len(calls), len(failed), text_of(last["content"]) if last.get("role") == "assistant" else None)]


def agents_state(state):
    return agents_items([item["raw_item"] for item in state["generated_items"]])


def agents_trace(export):
    spans = [o for o in export["data"] if o["object"] == "trace.span"]
    tools = [s for s in spans if s["span_data"]["type"] == "function"]
    last = sorted((s for s in spans if s["span_data"]["type"] == "generation"), key=lambda s: s["started_at"])[-1]
    return [(len(tools), sum(s["error"] is not None for s in tools), last["span_data"]["output"][0]["content"])]


def inspect_log(log):
    runs = []
    for sample in log["samples"]:
        messages = sample["messages"]
        calls = sum(len(m.get("tool_calls") or []) for m in messages)
        failed = sum(1 for m in messages if m["role"] == "tool" and m.get("error"))
        last = messages[-1]
        runs.append((calls, failed, last["content"] if last["role"] == "assistant" and not last.get("tool_calls")
                     else None))
    return runs


def openinference(export):
    spans = [s for r in export["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    kind = {id(s): {a["key"]: a["value"].get("stringValue") for a in s["attributes"]} for s in spans}
    tools = [s for s in spans if kind[id(s)]["openinference.span.kind"] == "TOOL"]
    llms = sorted((s for s in spans if kind[id(s)]["openinference.span.kind"] == "LLM"),
                  key=lambda s: int(s["startTimeUnixNano"]))
    answer = kind[id(llms[-1])].get("llm.output_messages.0.message.content")
    return [(len(tools), sum(s.get("status", {}).get("code") == "STATUS_CODE_ERROR" for s in tools), answer)]


def langchain_messages(messages):
    calls = sum(len(m["data"].get("tool_calls") or []) for m in messages if m["type"] == "ai")
    failed = sum(1 for m in messages if m["type"] == "tool" and m["data"]["status"] == "error")
    last = messages[-1]["data"]
    return [(calls, failed, last["content"] if messages[-1]["type"] == "ai" and not last.get("tool_calls") else None)]


def langsmith_runs(runs):
    tools = [r for r in runs if r["run_type"] == "tool"]
    failed = [r for r in tools if r.get("error") or r["outputs"]["output"].get("status") == "error"]
    llm = sorted((r for r in runs if r["run_type"] == "llm"), key=lambda r: r["dotted_order"])[-1]
    return [(len(tools), len(failed), llm["outputs"]["generations"][0][0]["text"])]


def claude_code(lines):
    events = [e for e in lines if e["type"] in ("user", "assistant") and not e.get("isSidechain")]
    blocks = [(e["type"], b) for e in events if isinstance(e["message"]["content"], list) for b in e["message"]["content"]]
    calls = sum(1 for _, b in blocks if b["type"] == "tool_use")
    failed = sum(1 for _, b in blocks if b["type"] == "tool_result" and b.get("is_error"))
    kind, last = blocks[-1]
    return [(calls, failed, last["text"] if kind == "assistant" and last["type"] == "text" else None)]


def swe_agent(traj):
    steps = traj["trajectory"]
    failed = sum(1 for s in steps if s["observation"].startswith(("Your proposed edit has introduced",
                                                                   "Your bash command contained syntax errors")))
    submitted = steps[-1]["action"].strip() == "submit" and traj["info"]["exit_status"] == "submitted"
    return [(len(steps), failed, traj["info"]["submission"] if submitted else None)]


def langfuse(export):
    observations = sorted(export["observations"], key=lambda o: o["startTime"])
    tools = [o for o in observations if o["type"] == "TOOL"]
    last = [o for o in observations if o["type"] == "GENERATION"][-1]
    output = json.loads(last["output"]) if isinstance(last["output"], str) else last["output"]
    if isinstance(output, list):  # OpenTelemetry GenAI messages
        parts = output[-1]["parts"]
        answer = parts[0]["content"] if parts[0]["type"] == "text" else None
    elif "content" in output:  # Google ADK's LlmResponse
        answer = output["content"]["parts"][0].get("text")
    else:  # an OpenAI Responses API response
        item = output["output"][-1]
        answer = item["content"][0]["text"] if item["type"] == "message" else None
    return [(len(tools), sum(o["level"] == "ERROR" for o in tools), answer)]


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


CASES = [
    (FIXTURES / "agents_sdk_items.json", agents_items),
    (FIXTURES / "agents_sdk_state.json", agents_state),
    (FIXTURES / "agents_sdk_trace.json", agents_trace),
    (FIXTURES / "inspect_generate.json", inspect_log),
    (FIXTURES / "inspect_react.json", inspect_log),
    (FIXTURES / "openinference.json", openinference),
    (FIXTURES / "openinference_agents.json", openinference),
    (FIXTURES / "langchain_messages.json", langchain_messages),
    (FIXTURES / "langsmith_runs.json", langsmith_runs),
    (PUBLIC / "claude_code_representative.jsonl", claude_code),
    (PUBLIC / "swe_agent_test_repo_i1.traj", swe_agent),
    (PUBLIC / "swe_agent_pydicom_1458.traj", swe_agent),
    (PUBLIC / "langfuse_openai_agents_2025_09_30.trace.json", langfuse),
    (PUBLIC / "langfuse_pydantic_ai_tools_2025_12_04.trace.json", langfuse),
    (PUBLIC / "langfuse_microsoft_agent_2025_12_17.trace.json", langfuse),
    (PUBLIC / "langfuse_google_adk_2025_08_28.trace.json", langfuse),
]


def imported(admiss_cli, tmp_path, path):
    rubric = tmp_path / "r.rubric"
    rubric.write_text(RUBRIC)
    ran = admiss_cli("import", "--rubric", rubric, path)
    assert ran.code == 0, ran.err
    text = ran.out.strip()
    bundles = [json.loads(text)] if text.startswith("{\n") else [json.loads(line) for line in text.splitlines()]
    return [(sum(e["kind"] == "procedurally_sound_tool_call" for e in b["evidence"])
             + sum(e["kind"] == "flawed_tool_call" for e in b["evidence"]),
             sum(e["kind"] == "flawed_tool_call" for e in b["evidence"]), b.get("output")) for b in bundles]


@pytest.mark.parametrize("path,count", CASES, ids=lambda c: c.name if isinstance(c, Path) else "")
def test_import_agrees_with_the_raw_file(admiss_cli, tmp_path, path, count):
    raw = jsonl(path) if path.suffix == ".jsonl" else json.loads(path.read_text())
    expected = count(raw)
    assert expected and all(calls for calls, _, _ in expected)
    assert imported(admiss_cli, tmp_path, path) == expected


@pytest.mark.parametrize("task", ["generate", "react"])
def test_an_eval_zip_agrees_with_its_samples(admiss_cli, tmp_path, task):
    with zipfile.ZipFile(FIXTURES / f"inspect_{task}.eval") as archive:
        names = [n for n in archive.namelist() if n.startswith("samples/")]
    expected = inspect_log(json.loads((FIXTURES / f"inspect_{task}.json").read_text()))
    assert len(names) == len(expected)
    assert imported(admiss_cli, tmp_path, FIXTURES / f"inspect_{task}.eval") == expected
