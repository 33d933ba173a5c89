"""Regular expressions from a JSON Schema, matched under a time bound.

jsonschema matches ``pattern`` and ``patternProperties`` with Python's ``re``, which
backtracks: ``^(a+)+$`` against forty ``a`` and a ``!`` takes longer than anyone waits, and
the candidate chooses the text. The schema gate therefore gets these keywords matched with
the ``regex`` package, which takes a timeout: all the matching for one candidate shares
PATTERN_BUDGET_S, and past it the check stops with :class:`PatternTimeout` (the gate
abstains, as the candidate's fault). ``additionalProperties`` and ``unevaluatedProperties``
also match property names against ``patternProperties`` inside the library; they are
handed the names only after every such match has been tried here under the same bound.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from typing import Any, Callable, Iterable, Iterator

import regex
from jsonschema.exceptions import ValidationError

from admiss.untrusted import UntrustedInput

# All the pattern matching of one candidate's check, in seconds. The engine checks its clock
# coarsely: on a busy machine a timed-out match was seen to return after about 2.5x this.
PATTERN_BUDGET_S = 0.5

_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("pattern_deadline", default=float("inf"))


class PatternTimeout(UntrustedInput):
    """Matching a schema pattern against the candidate's text ran past PATTERN_BUDGET_S
    (the candidate chose the text, so it is the candidate's fault)."""

    def __init__(self, pattern: str):
        super().__init__(pattern)
        self.pattern = pattern


# A schema has few patterns, each matched many times: compile each once (regex's own cache
# costs more per call than the match).
_compiled = functools.lru_cache(maxsize=1024)(regex.compile)


def compile_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be matched here, or None when it can."""
    try:
        _compiled(pattern)
    except (regex.error, TypeError) as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def pattern_budget(seconds: float = PATTERN_BUDGET_S) -> Iterator[None]:
    """Bound the pattern matching done inside the block to ``seconds`` in all."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within what is left of the budget."""
    left = _deadline.get() - time.monotonic()
    if left <= 0:
        raise PatternTimeout(pattern)
    try:
        return _compiled(pattern).search(text, timeout=min(left, PATTERN_BUDGET_S)) is not None
    except TimeoutError:
        raise PatternTimeout(pattern) from None


def bounded_keywords(originals: dict[str, Callable], property_patterns: Iterable[str]) -> dict[str, Callable]:
    """Keyword functions for ``jsonschema.validators.extend`` that match under the budget.

    ``originals`` are the draft's own keyword functions; ``property_patterns`` are every
    ``patternProperties`` pattern in the schema and the files it refers to.
    """
    everywhere = tuple(property_patterns)
    keywords: dict[str, Callable] = {"pattern": _pattern, "patternProperties": _pattern_properties}
    for name, patterns_of in (("additionalProperties", _own_patterns), ("unevaluatedProperties", lambda _: everywhere)):
        if name in originals:
            keywords[name] = _tried_first(originals[name], patterns_of)
    return keywords


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if matches(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _own_patterns(schema: dict) -> Iterable[str]:
    patterns = schema.get("patternProperties", {})
    return patterns if isinstance(patterns, dict) else ()


def _tried_first(original: Callable, patterns_of: Callable[[dict], Iterable[str]]) -> Callable:
    """``original``, run only once each pattern it will try has been tried here, bounded."""

    def keyword(validator: Any, value: Any, instance: Any, schema: dict) -> Iterator[ValidationError]:
        if validator.is_type(instance, "object"):
            for pattern in patterns_of(schema):
                for name in instance:
                    matches(pattern, name)
        yield from original(validator, value, instance, schema)

    return keyword
