"""Google ADK: a session (an object with ``events``), an eval case (``conversation``), or an
eval set holding one eval case (``eval_cases``). Field names are read in snake_case or
camelCase (``function_call`` or ``functionCall``), as ADK writes either.

A session event's ``content.parts`` give: its text parts (those not marked ``thought``)
joined into one step where its first text part stands, ``user`` when the event's author
(or the content's role) is the user, else ``assistant_text``; ``thought`` text parts
``reasoning`` steps; ``function_call`` parts tool calls; ``function_response`` parts the
result of the call with the same ``id`` (with no id: the earliest unanswered call of that
tool name). Other parts (inline data, code execution) are skipped, as are events with no
content.

An eval case's ``conversation`` is a list of invocations, each read in this order: its
``user_content`` (a user step); its ``intermediate_data``: ``tool_uses`` (tool calls),
``tool_responses`` (their results), ``intermediate_responses`` (``[author, parts]`` pairs,
assistant text), or ``invocation_events`` (read as session events); its
``final_response`` (assistant text).
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, error_in, fail, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, USER, Step, StepRef, Trace

NAME = "adk"
# B026: an eval set with more or fewer than one eval case (a trace is one run).
MANY_CASES = "B026"
_CAMEL = {"function_call": "functionCall", "function_response": "functionResponse", "eval_cases": "evalCases",
          "user_content": "userContent", "final_response": "finalResponse", "intermediate_data": "intermediateData",
          "tool_uses": "toolUses", "tool_responses": "toolResponses",
          "intermediate_responses": "intermediateResponses", "invocation_events": "invocationEvents",
          "invocation_id": "invocationId", "eval_case_results": "evalCaseResults",
          "eval_metric_result_per_invocation": "evalMetricResultPerInvocation",
          "actual_invocation": "actualInvocation", "session_details": "sessionDetails"}


def _key(holder: dict, key: str) -> str:
    """``key`` as ``holder`` spells it: snake_case, or camelCase when only that is there."""
    return key if key in holder or _CAMEL.get(key) not in holder else _CAMEL[key]


def _get(holder: dict, key: str, name: str, where: str) -> tuple[str, Any]:
    """The value of ``key`` in either spelling; B021 when ``holder`` has both, as each
    could say something else (a call that failed in one and succeeded in the other)."""
    camel = _CAMEL.get(key)
    if camel is not None and key in holder and camel in holder:
        fail(name, f"{where}.{camel}" if where else camel, f"both \"{key}\" and \"{camel}\": one field, spelled twice",
             hint="keep one spelling; which one ADK would read is not for a trace to decide")
    key = _key(holder, key)
    return key, holder.get(key)


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an ADK session, eval case/set or eval result, or None when it is one."""
    if not isinstance(value, dict):
        return "$", "not an object (an ADK session, eval case, eval set or eval result)"
    for key in ("events", _key(value, "eval_cases"), "conversation", _key(value, "eval_case_results"),
                _key(value, "eval_metric_result_per_invocation")):
        if key in value:
            return None if isinstance(value[key], list) else (key, "not an array")
    return "$", ("no \"events\" (a session), \"conversation\" (an eval case), \"eval_cases\" (an eval set) or "
                 "\"eval_case_results\" (an eval result)")


def read(value: Any, name: str) -> Trace:
    """The Trace of an ADK session, eval case, eval case result, or a one-case eval set or
    result; TraceError at the first element that breaks."""
    steps = Steps(NAME, name)
    typed(value, dict, name, "$")
    if "events" in value:
        _events(steps, typed(value["events"], list, name, "events"), "events", name)
        return steps.trace()
    cases = eval_cases(value)
    if cases is not None:
        if len(cases) != 1:
            key = _many_key(value)
            whole = "eval set" if key == _key(value, "eval_cases") else "eval result"
            fail(name, key, f"an {whole} of {len(cases)} eval cases: a trace is one run", MANY_CASES,
                 hint="each case is a run of its own: `admiss check` and `admiss import` read every case, "
                      "and so does admiss.traces.read.read_traces")
        path, case = cases[0]
        return read_case(case, name, path)
    if "conversation" in value or _key(value, "eval_metric_result_per_invocation") in value:
        return read_case(value, name, "")
    fail(name, "$", "no \"events\", \"conversation\", \"eval_cases\" or \"eval_case_results\": not an ADK "
                    "session, eval case, eval set or eval result")


def _many_key(value: dict) -> str:
    return _key(value, "eval_cases") if _key(value, "eval_cases") in value else _key(value, "eval_case_results")


def eval_cases(value: Any) -> list[tuple[str, Any]] | None:
    """The cases of an eval set or eval set result, each with its JSON path; None when
    ``value`` is neither."""
    if not isinstance(value, dict) or "events" in value:
        return None
    key = _many_key(value)
    cases = value.get(key)
    return [(f"{key}[{i}]", case) for i, case in enumerate(cases)] if isinstance(cases, list) else None


def read_case(case: Any, name: str, path: str) -> Trace:
    """The Trace of the eval case (or eval case result) at JSON ``path`` ("" for the whole value).

    An eval case result is read from its session's events when it has them, else from its
    actual invocations (``eval_metric_result_per_invocation[].actual_invocation``); the
    expected invocations beside them are the reference, not the run, and are skipped."""
    steps = Steps(NAME, name)
    base = f"{path}." if path else ""
    case = typed(case, dict, name, path or "$")
    key, session = _get(case, "session_details", name, path)
    per_key, per_invocation = _get(case, "eval_metric_result_per_invocation", name, path)
    if isinstance(session, dict) and isinstance(session.get("events"), list):
        _events(steps, session["events"], f"{base}{key}.events", name)
    elif per_invocation is not None:
        for k, result in enumerate(typed(per_invocation, list, name, f"{base}{per_key}")):
            at = f"{base}{per_key}[{k}]"
            actual_key, actual = _get(typed(result, dict, name, at), "actual_invocation", name, at)
            if actual is None:
                fail(name, f"{at}.actual_invocation", "missing")
            _invocation(steps, typed(actual, dict, name, f"{at}.{actual_key}"), k, f"{at}.{actual_key}", name,
                        expected=False)
    else:
        _case(steps, case, base, name)
    return steps.trace()


def _events(steps: Steps, events: list, base: str, name: str) -> None:
    for i, event in enumerate(events):
        where = f"{base}[{i}]"
        typed(event, dict, name, where)
        event_id = event.get("id") if type(event.get("id")) is str else None
        content = event.get("content")
        if content is None:
            message = event.get("error_message") or event.get("errorMessage")
            steps.skip(StepRef(NAME, where, i, event_id=event_id),
                       f"error event: {message}" if isinstance(message, str) else "event with no content")
            continue
        typed(content, dict, name, f"{where}.content")
        user = event.get("author") == "user" or content.get("role") == "user"
        _parts(steps, content.get("parts"), user, StepRef(NAME, where, i, event_id=event_id),
               f"{where}.content.parts", name)


def _parts(steps: Steps, parts: Any, user: bool, ref: StepRef, where: str, name: str) -> None:
    """The steps of a Content's ``parts`` (at ``where``); ``ref`` is the element that holds them."""
    texts: list[str] = []
    text_at = steps.position()
    only_text = True
    for j, part in enumerate(typed(parts, list, name, where) if parts is not None else ()):
        at = f"{where}[{j}]"
        typed(part, dict, name, at)
        part_ref = StepRef(NAME, at, ref.message_index, event_id=ref.event_id)
        text = part.get("text")
        if text is not None:
            typed(text, str, name, f"{at}.text")
            if part.get("thought") is True:
                only_text = False
                if text:
                    steps.add(Step(REASONING, part_ref, text=text))
                else:
                    steps.skip(part_ref, "thought with no text")
            else:
                if not texts:
                    text_at = steps.position()
                texts.append(text)
            continue
        only_text = False
        key, call = _get(part, "function_call", name, at)
        if call is not None:
            _call(steps, typed(call, dict, name, f"{at}.{key}"), part_ref, f"{at}.{key}", name)
            continue
        key, response = _get(part, "function_response", name, at)
        if response is not None:
            _response(steps, typed(response, dict, name, f"{at}.{key}"), part_ref, f"{at}.{key}", name)
            continue
        steps.skip(part_ref, f"{next(iter(part), 'empty')} part")
    text = "".join(texts)
    if text:
        steps.insert(text_at, Step(USER if user else ASSISTANT_TEXT, ref, text=text))
    elif only_text:
        steps.skip(ref, "content with no text")


def _call(steps: Steps, call: dict, ref: StepRef, where: str, name: str) -> None:
    call_id = _optional_str(call, "id", name, where)
    tool = _name(call, name, where)
    steps.call(StepRef(NAME, ref.path, ref.message_index, call_id, event_id=ref.event_id), tool,
               call.get("args", {}), call_id, _key_under(ref, where, "id"))


def _response(steps: Steps, response: dict, ref: StepRef, where: str, name: str) -> None:
    call_id = _optional_str(response, "id", name, where)
    tool = _name(response, name, where)
    result = response.get("response")
    answered = steps.answer(call_id, result, error_in(result),
                            StepRef(NAME, ref.path, ref.message_index, call_id, event_id=ref.event_id),
                            _key_under(ref, where, "id" if call_id is not None else "name"), tool)
    if result is None:  # an answer that carries no result says nothing of how the call went
        steps.no_result(answered, answered.result_ref, "function_response with no response")


def _key_under(ref: StepRef, where: str, key: str) -> str:
    """``key`` of the object at ``where``, as a key path under the step's element (``where``
    is the element itself or its function_call / function_response object)."""
    inner = where[len(ref.path) + 1:]
    return f"{inner}.{key}" if inner else key


def _optional_str(holder: dict, key: str, name: str, where: str) -> str | None:
    value = holder.get(key)
    return None if value is None else typed(value, str, name, f"{where}.{key}")


def _name(holder: dict, name: str, where: str) -> str:
    if "name" not in holder:
        fail(name, f"{where}.name", "missing")
    return typed(holder["name"], str, name, f"{where}.name")


def _case(steps: Steps, case: dict, base: str, name: str) -> None:
    conversation = typed(case.get("conversation"), list, name, f"{base}conversation")
    for k, invocation in enumerate(conversation):
        where = f"{base}conversation[{k}]"
        _invocation(steps, typed(invocation, dict, name, where), k, where, name, expected=True)


def _invocation(steps: Steps, invocation: dict, k: int, where: str, name: str, expected: bool) -> None:
    """One invocation; with ``expected`` (an eval case's), tool uses with no responses are
    the expected trajectory and are skipped, not read as calls that got no result."""
    key, invocation_id = _get(invocation, "invocation_id", name, where)
    invocation_id = invocation_id if type(invocation_id) is str and invocation_id else None
    key, user = _get(invocation, "user_content", name, where)
    if user is not None:
        _content(steps, user, True, StepRef(NAME, f"{where}.{key}", k, event_id=invocation_id), name)
    key, data = _get(invocation, "intermediate_data", name, where)
    if data is not None:
        _intermediate(steps, typed(data, dict, name, f"{where}.{key}"), k, invocation_id, f"{where}.{key}", name,
                      expected)
    key, final = _get(invocation, "final_response", name, where)
    if final is not None:
        _content(steps, final, False, StepRef(NAME, f"{where}.{key}", k, event_id=invocation_id), name)


def _content(steps: Steps, content: Any, user: bool, ref: StepRef, name: str) -> None:
    _parts(steps, typed(content, dict, name, ref.path).get("parts"), user, ref, f"{ref.path}.parts", name)


def _intermediate(steps: Steps, data: dict, k: int, invocation_id: str | None, where: str, name: str,
                  expected: bool) -> None:
    key, events = _get(data, "invocation_events", name, where)
    if events is not None:
        _events(steps, typed(events, list, name, f"{where}.{key}"), f"{where}.{key}", name)
        return
    key, uses = _get(data, "tool_uses", name, where)
    response_key, responses = _get(data, "tool_responses", name, where)
    reference = expected and not responses
    for m, call in enumerate(typed(uses, list, name, f"{where}.{key}") if uses is not None else ()):
        at = f"{where}.{key}[{m}]"
        if reference:
            steps.skip(StepRef(NAME, at, k, event_id=invocation_id),
                       "expected tool call (an eval case's reference trajectory, not a call that ran)")
        else:
            _call(steps, typed(call, dict, name, at), StepRef(NAME, at, k, event_id=invocation_id), at, name)
    for m, response in enumerate(typed(responses, list, name, f"{where}.{response_key}") if responses else ()):
        at = f"{where}.{response_key}[{m}]"
        _response(steps, typed(response, dict, name, at), StepRef(NAME, at, k, event_id=invocation_id), at, name)
    key, said = _get(data, "intermediate_responses", name, where)
    for m, pair in enumerate(typed(said, list, name, f"{where}.{key}") if said is not None else ()):
        at = f"{where}.{key}[{m}]"
        if type(pair) is not list or len(pair) != 2:
            fail(name, at, f"must be an [author, parts] pair, not {type_word(pair)}")
        _parts(steps, pair[1], False, StepRef(NAME, at, k, event_id=invocation_id), f"{at}[1]", name)
