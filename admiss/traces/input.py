"""Bundle or trace: what a decoded JSON value given to ``check`` is.

A bundle is an object with any of the fields only bundles have (``evidence``,
``candidates``, ``samples``, or ``output`` as a string or null: an OpenAI Responses
trace's ``output`` is an array), or with nothing but fields bundles and traces share
(``rubric``, ``prompt``, ``model``, ``meta``; so ``{}`` is an empty bundle). Any
other object is a trace, and the readers say which format it is, or why it is none. An
array is a trace when it starts with a message or an item (an object with a ``role`` or a
``type``); any other array (say, evidence items left unwrapped) is a bundle, and bundle
validation says that a bundle must be an object. A format named with ``--trace``
(``trace_format``) reads the value as that format.
"""

from __future__ import annotations

from typing import Any, NoReturn

from admiss.errors import Diagnostic, TraceError
from admiss.traces.steps import Trace

_BUNDLE_FIELDS = frozenset({"evidence", "candidates", "samples"})
_BUNDLE_OUTPUTS = (str, type(None))
_SHARED_FIELDS = frozenset({"rubric", "prompt", "model", "meta"})
# The fields that hold a whole run in some trace format: an object with one of them is a
# run, and an array whose first item is such an object is a file of runs.
RUN_FIELDS = frozenset({"messages", "events", "resourceSpans", "resourceLogs", "conversation", "eval_cases",
                        "evalCases", "eval_case_results", "evalCaseResults", "observations"})
# B030: an object with both a bundle's evidence and a trace's run.
BOTH = "B030"


def is_inspect_log(value: Any) -> bool:
    """Whether ``value`` is an Inspect AI eval log (its ``samples`` are runs)."""
    return type(value) is dict and type(value.get("eval")) is dict and type(value.get("samples")) is list


def is_trace(value: Any) -> bool:
    """Whether ``value`` is read as a trace (no format named)."""
    if type(value) is dict:
        if is_inspect_log(value):
            return True  # its samples are runs, not a bundle's samples
        if not _BUNDLE_FIELDS.isdisjoint(value) or ("output" in value and type(value["output"]) in _BUNDLE_OUTPUTS):
            return False
        return not _SHARED_FIELDS.issuperset(value)
    if type(value) is list:
        return bool(value) and type(value[0]) is dict and (
            "role" in value[0] or "type" in value[0] or not RUN_FIELDS.isdisjoint(value[0]))
    return isinstance(value, Trace)


def as_trace(value: Any, name: str, trace_format: str | None = None) -> Trace | None:
    """The Trace ``value`` holds, or None for a bundle; TraceError when it is neither, or
    B030 when it is both (a bundle's ``evidence`` beside a trace's run: read as a bundle,
    its evidence would pass without the rubric's MAP ever seeing the run)."""
    if trace_format is None and (type(value) is dict and "evidence" in value or not is_trace(value)):
        if type(value) is dict and "evidence" in value and not RUN_FIELDS.isdisjoint(value):
            both_error(value, name)
        return None  # the first test answers for nearly every bundle, at the cost of one lookup
    if isinstance(value, Trace):
        return value
    from admiss.traces.read import read_trace

    return read_trace(value, name, trace_format)


def both_error(value: dict, name: str) -> NoReturn:
    """TraceError B030 for an object that is both a bundle and a trace."""
    run = sorted(RUN_FIELDS.intersection(value))[0]
    raise TraceError([Diagnostic(BOTH, f"$: both a bundle's \"evidence\" and a trace's \"{run}\": which to "
                                 "check is ambiguous", file=name,
                                 hint="remove one, or name the trace format (--trace FORMAT; trace_format= in Python) to read it as a trace "
                                      "and its evidence field not at all")])
