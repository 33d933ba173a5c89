"""The Inspect AI scorer (admiss/integrations/inspect.py), run inside real Inspect evals on
Inspect's offline ``mockllm/model``: the samples' tool calls, a tool that raises ToolError,
the verdicts as scores, abstains as unscored, and the scorer found by name through the
``inspect_ai`` entry point by ``inspect score``."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the Inspect scorer needs pip install 'admiss[inspect-ai]'")

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import CORRECT, INCORRECT  # noqa: E402
from inspect_ai.solver import generate, use_tools  # noqa: E402
from inspect_ai.tool import ToolError, tool  # noqa: E402

from admiss.integrations.inspect import rubric_scorer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
BOOKING = ROOT / "rubrics" / "booking_cancellation.rubric"
# The booking rubric's property, gated by a judge that cannot run offline.
JUDGED = """
PROPERTY booking_cancelled "The booking was cancelled by the booking system" {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "booking lookup"
}

MAP {
  WHEN TOOL "cancel_booking" OUTCOME ok WHERE result.status == "cancelled"
    AS procedurally_sound_tool_call LABEL "booking system" FOR booking_cancelled
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN FINAL AS final_answer
}

CHAIN reply {
  GATE admissibility booking_cancelled
  GATE judge MODEL "openai/gpt-5" THRESHOLD 0.7 ON ABSTAIN fail_closed
    RUBRIC "Which claim in the reply does no tool result support? List each one."
}
"""


def booking_tool(action: str, status: str, refused: dict[str, str]):
    """A booking tool whose result says ``status``, or that raises ToolError for a refused ref."""

    @tool(name=action)
    def make():
        async def execute(ref: str) -> str:
            """Act on a booking.

            Args:
                ref: The booking reference.
            """
            if ref in refused:
                raise ToolError(refused[ref])
            return json.dumps({"status": status, "ref": ref})

        return execute

    return make


cancel_booking = booking_tool("cancel_booking", "cancelled", {"B9": "no booking B9"})
issue_refund = booking_tool("issue_refund", "refunded", {"B2": "payment declined"})


def agent(input, tools, tool_choice, config) -> ModelOutput:
    """The stand-in model: cancel, refund, then claim both, whatever the tools said."""
    ref = next(m.text for m in input if m.role == "user").split()[1]
    done = sum(1 for m in input if m.role == "tool")
    if done == 0:
        output = ModelOutput.for_tool_call("mockllm/model", "cancel_booking", {"ref": ref})
    elif done == 1 and any(t.name == "issue_refund" for t in tools):
        output = ModelOutput.for_tool_call("mockllm/model", "issue_refund", {"ref": ref})
    else:
        output = ModelOutput.from_content("mockllm/model", f"Booking {ref} is cancelled and refunded.")
    # Given usage, mockllm counts no tokens (that would fetch a tokenizer).
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def booking_task(scorer, tools, refs: list[str]) -> Task:
    return Task(dataset=[Sample(input=f"Cancel {ref} and refund it.", id=ref) for ref in refs],
                solver=[use_tools(tools), generate()], scorer=scorer)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inspect")
    judged = folder / "judged.rubric"
    judged.write_text(JUDGED)
    tasks = [booking_task(rubric_scorer(str(BOOKING)), [cancel_booking(), issue_refund()], ["B1", "B2"]),
             booking_task(rubric_scorer(str(judged), offline=True), [cancel_booking()], ["B1", "B9"])]
    # Inspect adds a handler to the root logger and sets sys.excepthook: the tests after
    # these, in this process, get them back as they were.
    handlers, hook = list(logging.getLogger().handlers), sys.excepthook
    try:
        return folder, eval(tasks, model=get_model("mockllm/model", custom_outputs=agent),
                            log_dir=str(folder / "logs"), display="none")
    finally:
        logging.getLogger().handlers[:], sys.excepthook = handlers, hook


def scores(log) -> dict:
    return {sample.id: sample.scores["rubric_scorer"] for sample in log.samples}


def test_a_proven_claim_is_correct_and_one_after_a_tool_error_is_incorrect(logs):
    _, (booking, _) = logs
    assert booking.status == "success"
    got = scores(booking)
    assert (got["B1"].value, got["B2"].value) == (CORRECT, INCORRECT)
    assert got["B2"].answer == "Booking B2 is cancelled and refunded."
    # The explanation is the report: the refund's failed call excluded as a flawed tool call.
    assert "property: The refund was issued by the payments system" in got["B2"].explanation
    assert "(forbidden)" in got["B2"].explanation and "verdict: no" in got["B2"].explanation
    report = got["B2"].metadata["admiss"]
    assert [p["verdict"] for p in report["properties"]] == ["yes", "no"] and report["verdict"] == "fail"
    assert booking.results.scores[0].metrics["accuracy"].value == 0.5


def test_a_verdict_resting_on_an_abstain_is_unscored_and_left_out_of_the_metrics(logs):
    _, (_, judged) = logs
    got = scores(judged)
    # B1: the cancellation is proven, but the judge could not run (offline), fail_closed.
    assert math.isnan(got["B1"].value) and got["B1"].reason == "grader_failed"
    assert got["B1"].explanation.startswith("unscored: the verdict rests on an abstain (judge: offline")
    # B9: the cancel call failed: a fail on the evidence's merits, whatever the judge did.
    assert got["B9"].value == INCORRECT
    [result] = judged.results.scores
    assert (result.scored_samples, result.unscored_samples) == (1, 1)
    assert result.metrics["accuracy"].value == 0.0


def test_inspect_score_finds_the_scorer_by_name_through_the_entry_point(logs):
    folder, (booking, _) = logs
    rescored = folder / "rescored.eval"
    # A fresh process knows admiss only through the inspect_ai entry point.
    ran = subprocess.run([str(Path(sys.executable).parent / "inspect"), "score", booking.location, "--scorer",
                          "admiss/rubric_scorer", "-S", f"rubric={BOOKING}", "--action", "overwrite",
                          "--output-file", str(rescored), "--display", "none"],
                         capture_output=True, text=True, timeout=300, cwd=folder)
    assert ran.returncode == 0, ran.stderr[-3000:]
    log = read_eval_log(str(rescored))
    assert {s.id: s.scores["rubric_scorer"].value for s in log.samples} == {"B1": CORRECT, "B2": INCORRECT}


def test_a_bad_rubric_is_refused_before_any_sample_runs_without_a_traceback(logs):
    from admiss.integrations.inspect import RubricError

    folder, (booking, _) = logs
    bad = folder / "bad.rubric"
    bad.write_text("PROPERTY p {\n  ADMIT verified_extrenal_source\n}\n")
    with pytest.raises(RubricError, match="did you mean 'verified_external_source'") as raised:
        rubric_scorer(str(bad))
    assert raised.value.diagnostics[0].code == "E101"
    ran = subprocess.run([str(Path(sys.executable).parent / "inspect"), "score", booking.location, "--scorer",
                          "admiss/rubric_scorer", "-S", f"rubric={bad}", "--display", "none"],
                         capture_output=True, text=True, timeout=300, cwd=folder)
    assert ran.returncode != 0
    # Inspect prints the message wrapped to the terminal's width.
    assert f"{bad}:2:9: E101 unknown evidence kind 'verified_extrenal_source'" in " ".join(ran.stdout.split())
    assert "hint: did you mean 'verified_external_source'?" in ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr


# One rung: a cheap gate, then a gate program that always crashes (an abstain, the gate's fault).
CRASHING = """
PROPERTY cited "A source supports the answer" {
  ADMIT verified_external_source
}

CHAIN reply {
  GATE json_valid
  GATE subprocess CMD ["python", "crash.py"] TIMEOUT 5s ON ABSTAIN fail_open
}
"""


@pytest.fixture
def crashing(tmp_path):
    import admiss

    (tmp_path / "crash.py").write_text("import sys\nsys.exit(3)\n")
    rubric = tmp_path / "crashing.rubric"
    rubric.write_text(CRASHING)
    with admiss.load(rubric) as loaded:
        yield lambda output: loaded.check({"evidence": [], "output": output, "model": "m"})


def test_a_pass_that_rests_on_a_crashed_gate_is_unscored(crashing):
    from admiss.integrations.inspect import score_of

    report = crashing('{"ok": true}')
    assert report.verdict == "pass"  # fail_open counted the crash as a pass
    score = score_of(report, None)
    assert math.isnan(score.value) and score.reason == "scoring_failed"
    assert "subprocess: " in score.explanation.splitlines()[0]


def test_a_fail_on_the_candidates_merits_or_content_stays_incorrect(crashing):
    from admiss.integrations.inspect import score_of

    # json_valid fails first: the crash never decides.
    assert score_of(crashing("not json"), None).value == INCORRECT
    # A lone surrogate cannot be sent to the program: an abstain the candidate caused, a fail.
    report = crashing('"\ud800"')
    assert report.chain.rungs[-1].gates[-1].fault == "candidate"
    assert score_of(report, None).value == INCORRECT
