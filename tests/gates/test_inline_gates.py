"""non_empty and json_valid: free, inline, no I/O."""

from __future__ import annotations

import pytest
from gatekit import gate

from admiss.gates import json_valid, non_empty
from admiss.gates.base import FAIL, PASS, Candidate, GateContext


def verdict_of(module, output):
    check = module.build(gate(module.__name__.rsplit(".", 1)[1]), GateContext(rubric_dir=None))
    assert check.cheap and check.arun is None
    return check.run(Candidate(output=output))


@pytest.mark.parametrize(
    ("output", "verdict", "reason"),
    [
        (None, FAIL, "no output"),
        ("", FAIL, "output is empty"),
        (" \n\t\u00a0\u2003", FAIL, "output is only whitespace"),
        ("0", PASS, ""),
        ("  x  ", PASS, ""),
    ],
)
def test_non_empty(output, verdict, reason):
    result = verdict_of(non_empty, output)
    assert (result.verdict, result.reason, result.cost_usd) == (verdict, reason, 0)


@pytest.mark.parametrize("output", ['{"a": [1, 2.5, null, true]}', "[]", '"text"', " 42 ", "null"])
def test_json_valid_passes_json(output):
    assert verdict_of(json_valid, output).verdict == PASS


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (None, "no output"),
        ("", "output is not JSON: Expecting value at line 1 column 1"),
        ('{"a": 1,}', "output is not JSON"),
        ("{'a': 1}", "output is not JSON"),
        ('{"a": 1} trailing', "Extra data at line 1 column 10"),
        ("NaN", "NaN is not a JSON value"),
        ('{"x": -Infinity}', "-Infinity is not a JSON value"),
    ],
)
def test_json_valid_fails_what_is_not_json(output, reason):
    result = verdict_of(json_valid, output)
    assert result.verdict == FAIL
    assert reason in result.reason
