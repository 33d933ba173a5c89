"""The promptfoo assertion: ``get_assert(output, context)`` called with the context promptfoo
documents (its ``AssertionValueFunctionContext``: prompt, vars, test, logProbs, config,
provider, providerResponse, trace, metadata), and once through a real ``promptfoo eval``
when promptfoo is installed (``ADMISS_PROMPTFOO`` names its program, else ``promptfoo`` on
PATH; CI does not install it: the Node package is 1.4 GB).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "serve"))

from agentkit import REFUND_RULES  # noqa: E402

from admiss.integrations.promptfoo import get_assert  # noqa: E402

GATED = """
PROPERTY sourced "The answer rests on a filing" {
  ADMIT verified_external_source
  FORBID final_answer
}

CHAIN json {
  GATE non_empty ON ABSTAIN fail_closed
  GATE json_valid
}
"""
CLAIM = "Your refund has been issued."
FILING = {"kind": "verified_external_source", "detail": "10-K names the operator", "source_label": "10-K filing"}
# A record of the refund from the payments system, offered as a bundle item.
REFUND = {"kind": "procedurally_sound_tool_call", "detail": "refund r-9 issued", "source_label": "payments system"}


def refund_call(status: str) -> list[dict]:
    return [{"role": "user", "content": "Please refund order A1."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "issue_refund", "arguments": '{"order": "A1"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"status": status})}]


@pytest.fixture
def rubric(tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)  # promptfoo runs assertions in its config's folder
    Path("refund.rubric").write_text(REFUND_RULES)
    Path("gated.rubric").write_text(GATED)
    return "refund.rubric"


def context(output: str, vars: dict, config: dict | None, prompt: str = "Please refund order A1.") -> dict:
    """promptfoo's AssertionValueFunctionContext for one test case of an echo provider."""
    assertion = {"type": "python", "value": "file://admiss_assert.py", "config": config}
    return {
        "prompt": prompt,
        "vars": vars,
        "test": {"vars": vars, "assert": [assertion], "options": {}, "metadata": {}},
        "logProbs": None,
        "config": config,
        "provider": {"id": "echo", "label": "", "config": {}},
        "providerResponse": {"output": output, "raw": output, "cached": False, "metadata": {}},
        "trace": None,
        "metadata": {},
    }


def test_a_claim_the_conversation_proves_passes_with_a_result_per_property(rubric):
    result = get_assert(CLAIM, context(CLAIM, {"messages": json.dumps(refund_call("refunded"))}, {"rubric": rubric}))
    assert (result["pass"], result["score"]) == (True, 1.0)
    [component] = result["componentResults"]
    assert component["pass"] is True and component["reason"].startswith("refund_issued: yes.")
    assert "Excluded: Your refund has been issued. (forbidden)" in component["reason"]
    assert result["namedScores"] == {"refund_issued": 1.0}
    assert result["reason"].endswith("aggregate: pass\nmissing_evidence_count: 0")


def test_the_output_alone_is_a_final_answer_and_never_proves_itself(rubric):
    result = get_assert(CLAIM, context(CLAIM, {}, {"rubric": rubric}))
    assert (result["pass"], result["score"]) == (False, 0.0)
    assert result["componentResults"][0]["pass"] is False
    assert "excluded: Your refund has been issued. (forbidden)" in result["reason"]


def test_a_failed_refund_call_is_no_proof(rubric):
    messages = refund_call("declined")
    result = get_assert(CLAIM, context(CLAIM, {"messages": messages}, {"rubric": rubric}))
    assert result["pass"] is False


def test_vars_evidence_items_are_offered_and_shortcuts_rejected(rubric):
    passing = get_assert(CLAIM, context(CLAIM, {"evidence": json.dumps([REFUND])}, {"rubric": rubric}))
    assert passing["pass"] is True
    shortcut = {**REFUND, "source_label": "refund request"}
    failing = get_assert(CLAIM, context(CLAIM, {"evidence": [shortcut]}, {"rubric": rubric}))
    assert failing["pass"] is False and "(shortcut-rejected)" in failing["componentResults"][0]["reason"]


def test_a_one_rung_chain_gates_the_output_as_a_component(rubric):
    config = {"rubric": "gated.rubric"}
    served = get_assert('{"answer": 42}', context('{"answer": 42}', {"evidence": [FILING]}, config))
    assert served["pass"] is True and served["componentResults"][-1]["reason"].startswith("chain json: served")
    refused = get_assert("forty-two", context("forty-two", {"evidence": [FILING]}, config))
    assert (refused["pass"], refused["score"]) == (False, 0.5)
    assert "json_valid: fail" in refused["componentResults"][-1]["reason"]


@pytest.mark.parametrize("config, vars, said", [
    (None, {}, "the assertion needs config"),
    ({"rubric": "missing.rubric"}, {}, "missing.rubric: E001"),
    ({"rubric": "refund.rubric", "offline": "yes"}, {}, "config.offline must be true or false"),
    ({"rubric": "refund.rubric"}, {"messages": "[{"}, "vars.messages is text that is not JSON"),
    ({"rubric": "refund.rubric"}, {"messages": {"role": "user"}}, "vars.messages must be an array"),
    # A tool result that answers no call: the trace reader's located error, not a traceback.
    ({"rubric": "refund.rubric"}, {"messages": [{"role": "tool", "tool_call_id": "x", "content": "{}"}]}, "messages[0]"),
    ({"rubric": "refund.rubric"}, {"evidence": [{"kind": "procedurally_sound_tool_call"}]}, "evidence[0].detail"),
])
def test_what_admiss_cannot_read_fails_the_assertion_with_a_located_reason(rubric, config, vars, said):
    result = get_assert(CLAIM, context(CLAIM, vars, config))
    assert result["pass"] is False and result["score"] == 0.0
    assert said in result["reason"], result["reason"]


def test_a_rubric_that_does_not_compile_is_reported_at_its_line(rubric):
    Path("broken.rubric").write_text('PROPERTY p "x" {\n  ADMIT verified_extrnal_source\n}\n')
    result = get_assert(CLAIM, context(CLAIM, {}, {"rubric": "broken.rubric"}))
    assert result["pass"] is False and "broken.rubric:2:" in result["reason"]


def _promptfoo() -> str | None:
    return os.environ.get("ADMISS_PROMPTFOO") or shutil.which("promptfoo")


PROMPTFOO_CONFIG = """
prompts:
  - "{{answer}}"
providers:
  - echo
defaultTest:
  assert:
    - type: python
      value: file://admiss_assert.py
      config:
        rubric: refund.rubric
tests:
  - description: proven
    vars:
      answer: Your refund has been issued.
      messages: file://proven.json
  - description: unproven
    vars:
      answer: Your refund has been issued.
"""


@pytest.mark.slow
@pytest.mark.skipif(_promptfoo() is None, reason="promptfoo is not installed (npm install promptfoo; "
                                                 "ADMISS_PROMPTFOO=path/to/promptfoo)")
def test_promptfoo_eval_runs_the_assertion(rubric, tmp_path):
    Path("admiss_assert.py").write_text("from admiss.integrations.promptfoo import get_assert  # noqa: F401\n")
    Path("proven.json").write_text(json.dumps(refund_call("refunded")))
    Path("promptfooconfig.yaml").write_text(PROMPTFOO_CONFIG)
    env = {**os.environ, "PROMPTFOO_PYTHON": sys.executable, "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": str(tmp_path / "promptfoo-home")}
    run = subprocess.run([_promptfoo(), "eval", "-c", "promptfooconfig.yaml", "-o", "out.json", "--no-cache"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 100, run.stdout + run.stderr  # promptfoo's exit code when a test failed
    results = {r["testCase"]["description"]: r["gradingResult"] for r in
               json.loads(Path("out.json").read_text())["results"]["results"]}
    assert results["proven"]["pass"] is True and results["unproven"]["pass"] is False
    [component] = results["unproven"]["componentResults"][0]["componentResults"]
    assert component["reason"].startswith("refund_issued: no.")
