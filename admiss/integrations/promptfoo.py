"""A promptfoo Python assertion: ``get_assert(output, context)`` checks the output against a rubric.

promptfoo calls ``get_assert`` of a ``file://...py`` assertion with the provider's output
and its ``AssertionValueFunctionContext``; the assertion's ``config`` names the rubric:

- ``rubric`` (required): a ``.rubric`` or IR file, relative to the folder promptfoo runs in;
- ``admiss_config``: an admiss.toml (providers of judge gates); ``chain``: which CHAIN, when
  the rubric has several; ``offline``: true to call no model (gates that need one abstain).

The evidence is what the test case holds, read as ``admiss check`` reads a trace: the
conversation in ``vars.messages`` (OpenAI chat messages, as a list or as JSON text) with
the output as the run's final answer (without it, the prompt and the output), mapped by
the rubric's MAP block, plus the bundle evidence items in ``vars.evidence``. The output
alone is a final answer, so a property passes only on evidence the test case gives.

The result is promptfoo's GradingResult: ``pass`` (the report's verdict), ``score`` (the
share of properties, and the chain, that passed), ``reason`` (the evidence-first text
report), ``componentResults`` (one per property, and one for the chain) and
``namedScores`` (each property's 1 or 0). A rubric or a test case admiss cannot read
fails the assertion with the located error as its reason; it never passes.

This module imports nothing of promptfoo: promptfoo is a Node program that runs Python
assertions through its own wrapper.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from admiss.api import load
from admiss.errors import AdmissError
from admiss.report import CheckReport

CHAIN_PASSED = "pass"


def get_assert(output: Any, context: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's GradingResult for ``output`` under the rubric ``context['config']`` names."""
    try:
        report = _report(output, context)
    except (AdmissError, _ConfigError) as error:
        return {"pass": False, "score": 0.0, "reason": f"admiss: {error}"}
    data = report.to_dict()
    components = [_property_result(p) for p in data["properties"]]
    chain = data.get("chain")
    if chain is not None:
        components.append(_chain_result(chain))
    passed = sum(1 for c in components if c["pass"])
    return {
        "pass": report.verdict == CHAIN_PASSED,
        "score": passed / len(components) if components else float(report.verdict == CHAIN_PASSED),
        "reason": report.to_text(),
        "componentResults": components,
        "namedScores": {p["name"]: float(p["verdict"] == "yes") for p in data["properties"]},
    }


class _ConfigError(ValueError):
    """The assertion's config or the test case's vars are not what admiss reads."""


def _report(output: Any, context: Mapping[str, Any]) -> CheckReport:
    config = context.get("config") if isinstance(context, Mapping) else None
    if not isinstance(config, Mapping) or not isinstance(config.get("rubric"), str):
        raise _ConfigError('the assertion needs config: {rubric: "path/to/file.rubric"}')
    offline = config.get("offline", False)
    if not isinstance(offline, bool):
        raise _ConfigError("config.offline must be true or false")
    rubric = load(config["rubric"], _optional_text(config, "admiss_config"), offline=offline)
    variables = context.get("vars") or {}
    if not isinstance(variables, Mapping):
        raise _ConfigError("the test case's vars are not an object")
    trace = {"messages": _messages(variables, context.get("prompt")) + [{"role": "assistant", "content": _text(output)}]}
    bundle = rubric.import_trace(trace, "vars.messages")
    bundle.pop("trace", None)
    # The test case's own items first, so an error at evidence[i] is at vars.evidence[i].
    bundle["evidence"] = _evidence(variables) + bundle["evidence"]
    return rubric.check(bundle, "test case", chain=_optional_text(config, "chain"))


def _optional_text(config: Mapping[str, Any], key: str) -> str | None:
    value = config.get(key)
    if value is not None and not isinstance(value, str):
        raise _ConfigError(f"config.{key} must be a string")
    return value


def _text(output: Any) -> str:
    """The output as text: promptfoo hands over an output it parsed as JSON as that value."""
    return output if isinstance(output, str) else json.dumps(output)


def _messages(variables: Mapping[str, Any], prompt: Any) -> list[Any]:
    """The conversation before the output: ``vars.messages``, else the prompt as a user message."""
    messages = _decoded(variables.get("messages"), "vars.messages")
    if messages is None:
        return [{"role": "user", "content": prompt}] if isinstance(prompt, str) and prompt else []
    if not isinstance(messages, list):
        raise _ConfigError("vars.messages must be an array of chat messages")
    return list(messages)


def _evidence(variables: Mapping[str, Any]) -> list[Any]:
    evidence = _decoded(variables.get("evidence"), "vars.evidence")
    if evidence is None:
        return []
    if not isinstance(evidence, list):
        raise _ConfigError("vars.evidence must be an array of evidence items")
    return evidence


def _decoded(value: Any, where: str) -> Any:
    """A var's value; one given as JSON text (promptfoo vars are often strings) is decoded."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise _ConfigError(f"{where} is text that is not JSON: {exc}") from None


def _property_result(prop: Mapping[str, Any]) -> dict[str, Any]:
    excluded = "; ".join(f"{e['detail']} ({e['reason']})" for e in prop["excluded"])
    reason = f"{prop['name']}: {prop['verdict']}. {prop['rationale']}"
    if prop["evidence"]:
        reason += f" Evidence: {'; '.join(prop['evidence'])}."
    if excluded:
        reason += f" Excluded: {excluded}."
    yes = prop["verdict"] == "yes"
    return {"pass": yes, "score": float(yes), "reason": reason}


def _chain_result(chain: Mapping[str, Any]) -> dict[str, Any]:
    served = chain["served"] is not None
    gates = "; ".join(f"{g['gate']}: {g['effective']}" + (f" ({g['reason']})" if g.get("reason") else "")
                      for rung in chain["rungs"] for g in rung["gates"])
    outcome = f"served by rung {chain['served']}" if served else "exhausted"
    return {"pass": served, "score": float(served), "reason": f"chain {chain['name']}: {outcome}. {gates}"}
