"""SWE-agent trajectories (``.traj``): an object with ``trajectory`` (a list of steps, each
with ``thought``, ``action`` and ``observation``) and ``info`` (``exit_status``,
``submission``).

Each step's ``thought`` gives an ``assistant_text`` step; its ``action`` (a command line for
SWE-agent's shell and tools) is a tool call named by the command's first word, its
arguments ``{"command": action}``, its result the ``observation``, both in the step itself.

Errors: SWE-agent records no exit codes, so an observation is an error only when it is one
of SWE-agent's own refusals (its default templates): a bash command with syntax errors
that was not executed, a command cancelled for taking too long, an edit refused for the
syntax errors it would introduce; or an error by the rule for formats without an error flag.

Final answer: a run that ends on ``submit`` with an ``exit_status`` of ``submitted`` gives
its ``info.submission`` (the patch) as its answer; a run that ended otherwise (cost or
context limits, format errors) has none, and its exit status is listed in ``skipped``.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, field, short, text_error, typed
from admiss.traces.steps import ASSISTANT_TEXT, Step, StepRef, Trace

NAME = "swe_agent"
# The starts of SWE-agent's observations that say a command did not run or was refused.
REFUSALS = (
    "Your bash command contained syntax errors and was NOT executed",
    "The command '",  # ... was cancelled because it took more than {timeout} seconds
    "Your proposed edit has introduced new syntax error",
)
_CANCELLED = "was cancelled because it took more than"


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a SWE-agent trajectory, or None."""
    if not isinstance(value, dict) or "trajectory" not in value:
        return "$", "no \"trajectory\" (a SWE-agent .traj)"
    return None if isinstance(value["trajectory"], list) else ("trajectory", "not an array")


def observation_error(text: str) -> str | None:
    """Why an observation says its command failed, or None."""
    start = text.lstrip()
    if start.startswith(REFUSALS) and (not start.startswith("The command '") or _CANCELLED in start[:2000]):
        return short(start.splitlines()[0])
    return text_error(text)


def read(value: Any, name: str) -> Trace:
    """The Trace of a SWE-agent trajectory; TraceError at the step that breaks."""
    typed(value, dict, name, "$")
    steps = Steps(NAME, name)
    trajectory = field(value, "trajectory", list, name, "$")
    last_action = None
    for i, step in enumerate(trajectory):
        where = f"trajectory[{i}]"
        if type(step) is not dict:
            typed(step, dict, name, where)
        thought = step.get("thought")
        if type(thought) is str and thought.strip():
            steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, f"{where}.thought", i), thought))
        action = step.get("action")
        if type(action) is not str or not action.strip():
            steps.skip(StepRef(NAME, where, i), "a step with no action")
            continue
        observation = step.get("observation")
        command = action.strip()
        last_action = command.split(None, 1)[0]
        call = steps.call(StepRef(NAME, where, i), last_action, {"command": command}, None)
        if observation is not None:
            text = observation if type(observation) is str else typed(observation, str, name, f"{where}.observation")
            steps.resolve(call, text, observation_error(text), None, from_text=True)
    _answer(steps, value, last_action, name)
    return steps.trace(_model(value))


def _answer(steps: Steps, value: dict, last_action: str | None, name: str) -> None:
    info = value.get("info")
    if not isinstance(info, dict):
        return
    status = info.get("exit_status")
    submission = info.get("submission")
    if last_action == "submit" and status == "submitted" and type(submission) is str and submission:
        steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, "info.submission"), text=submission))
    elif type(status) is str:
        steps.skip(StepRef(NAME, "info.exit_status"), f"the run ended with exit status {status!r}, no submission")


def _model(value: dict) -> str | None:
    """The model, when the trajectory's replay config names it."""
    info = value.get("info")
    config = info.get("config") if isinstance(info, dict) else None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if type(name) is str else None
