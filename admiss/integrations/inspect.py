"""The Inspect AI scorer: a sample's conversation (its TaskState's messages, tool calls and
tool results with their errors) read as a trace through the rubric's MAP block and checked.
The only module that imports inspect_ai (``pip install 'admiss[inspect-ai]'``).

Inspect finds it by the ``inspect_ai`` entry point named ``admiss`` (pyproject.toml), which
loads this module, so ``admiss/rubric_scorer`` works wherever Inspect takes a scorer by
name (``inspect score LOG --scorer admiss/rubric_scorer -S rubric=FILE``).

The Score: CORRECT when the rubric's verdict is pass, INCORRECT when it is fail, with the
evidence-first report as its explanation, the run's final answer as its answer and the JSON
report under ``metadata["admiss"]``. A verdict that rests on an abstain (a gate that could
not judge: a provider down, offline, a crashed program) is ``Score.unscored``: Inspect keeps
it and leaves it out of the metrics, as it does a grader that failed. An abstain the
candidate's own content caused is the candidate's fault and stays INCORRECT, and so is a
conversation that cannot be read as a trace: nothing the model writes can unscore itself.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
# Inspect prints a PrerequisiteError's message without a traceback (its own choice for a
# user's mistake); it has no public name for it.
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

import admiss
from admiss.cascade import MODEL_GATES, SERVED, GateRecord
from admiss.errors import AdmissError
from admiss.gates.base import ABSTAIN, CANDIDATE_FAULT, FAIL
from admiss.traces.inspect_eval import read_sample

if TYPE_CHECKING:
    from admiss.api import Rubric
    from admiss.report import CheckReport
    from admiss.traces.steps import Trace


class RubricError(PrerequisiteError):
    """A rubric the scorer cannot use: admiss's located message, with its diagnostics."""

    def __init__(self, error: AdmissError):
        super().__init__(error.render())
        self.args = (self.message,)
        self.diagnostics = error.diagnostics


@scorer(metrics=[accuracy(), stderr()])
def rubric_scorer(rubric: str, config: str | None = None, offline: bool = False, chain: str | None = None) -> Scorer:
    """Score each sample by the rubric at path ``rubric`` (``config``: the admiss.toml of its
    gate chains; ``offline``: call no model, such gates abstain; ``chain``: which CHAIN when
    the rubric has several). A bad rubric, or a gate whose provider the config lacks, raises
    RubricError here, before any sample runs."""
    try:
        loaded = admiss.load(Path(rubric), config, offline)
        loaded.prepare(chain)
    except AdmissError as error:
        raise RubricError(error) from None
    # A chain's gates run on the Rubric's own event loop: off Inspect's loop, one at a time.
    lock = threading.Lock()

    async def score(state: TaskState, target: Target) -> Score:
        name = f"sample {state.sample_id} epoch {state.epoch}"
        try:
            trace = sample_trace(state, name)
            report = await anyio.to_thread.run_sync(functools.partial(_checked, loaded, lock, trace, name, chain))
        except AdmissError as error:  # only the sample's content can raise it now: its fault
            return Score(value=INCORRECT, explanation=error.render(), reason="invalid_response_format")
        return score_of(report, trace.final_answer)

    return score


def sample_trace(state: TaskState, name: str) -> "Trace":
    """The sample's conversation as the Trace its log would give (admiss.traces.inspect_eval
    reads it): the messages as Inspect writes them into a log, and the model that answered."""
    model = state.output.model if state.output and state.output.model else str(state.model)
    sample = {"messages": [m.model_dump(mode="json", exclude_none=True) for m in state.messages],
              "epoch": state.epoch, "output": {"model": model}}
    return read_sample(sample, name, "")


def _checked(rubric: "Rubric", lock: threading.Lock, trace: "Trace", name: str, chain: str | None) -> "CheckReport":
    with lock:
        return rubric.check(trace, name, chain)


def score_of(report: "CheckReport", answer: str | None) -> Score:
    """The Score of a report: its verdict, or unscored when the verdict rests on an abstain."""
    explanation = report.to_text()
    metadata = {"admiss": report.to_dict()}
    abstains = deciding_abstains(report)
    if abstains:
        grader = any(g.gate in MODEL_GATES for g in abstains)
        said = "; ".join(f"{g.gate}: {g.reason}" for g in abstains)
        return Score.unscored(reason="grader_failed" if grader else "scoring_failed", answer=answer,
                              explanation=f"unscored: the verdict rests on an abstain ({said})\n{explanation}",
                              metadata=metadata)
    return Score(value=CORRECT if report.verdict == "pass" else INCORRECT, answer=answer, explanation=explanation,
                 metadata=metadata)


def deciding_abstains(report: "CheckReport") -> list[GateRecord]:
    """The gates whose abstain (one the gate itself caused) decided the chain's verdict: on a
    served rung, any such abstain that counted as a pass; on an exhausted chain, the fails of
    its last rung when every one of them is such an abstain."""
    if report.chain is None or not report.chain.rungs:
        return []
    last = report.chain.rungs[-1]
    if last.outcome == SERVED:
        return [g for g in last.gates if _gate_abstained(g)]
    fails = [g for g in last.gates if g.effective == FAIL]
    return fails if fails and all(_gate_abstained(g) for g in fails) else []


def _gate_abstained(gate: GateRecord) -> bool:
    return gate.verdict == ABSTAIN and gate.fault != CANDIDATE_FAULT
