"""Clause coverage of gates and their ON ABSTAIN, against counts this test works out itself.

tests/testing/test_coverage.py counts gates on a rung where every gate passes and none
abstains. Here gates fail, stop their rung early and abstain, and the chain escalates: the
expected hits come from the seed's cascade, restated in plain Python over the cases (gates
in written order, stop at the first fail, an abstain decided by ON ABSTAIN, a failed rung
escalates one rung), and are compared with what the real `admiss test --coverage` writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The subprocess gate's verdict is the candidate's first word; "abstain" exits non-zero,
# which the gate takes as an abstain.
GATE_PROGRAM = """import json, sys
word = (json.load(sys.stdin)["candidate"].split() or [""])[0]
if word == "abstain":
    sys.exit(3)
print(json.dumps({"verdict": "pass" if word == "ok" else "fail"}))
"""

RUBRIC = """CHAIN pipeline {{
  RUNG draft MODEL "openai/gpt-5-mini" {{
    GATE non_empty ON ABSTAIN fail_closed
    GATE subprocess CMD [{python}, "verdict.py"] TIMEOUT 10s ON ABSTAIN fail_closed
  }}
  RUNG strong MODEL "anthropic/claude-sonnet-5" {{
    GATE non_empty ON ABSTAIN fail_closed
    GATE subprocess CMD [{python}, "verdict.py"] TIMEOUT 10s
  }}
}}
"""
# Each rung's gates as written: (kind, ON ABSTAIN).
RUNGS = {"draft": [("non_empty", "fail_closed"), ("subprocess", "fail_closed")],
         "strong": [("non_empty", "fail_closed"), ("subprocess", "fail_open")]}
# (draft's output, strong's output) of each case.
CASES = [("ok fine", "ok"), ("bad answer", "ok"), ("abstain", "abstain"), ("", "bad"), ("abstain", "")]


def _gate(kind: str, output: str) -> str:
    if kind == "non_empty":
        return "pass" if output.strip() else "fail"
    word = (output.split() or [""])[0]
    return "abstain" if word == "abstain" else "pass" if word == "ok" else "fail"


def _cascade(outputs: dict[str, str], hits: dict[tuple, int]) -> str | None:
    """The rung that serves (None: exhausted), counting each gate run and each abstain."""
    for rung, gates in RUNGS.items():
        for g, (kind, on_abstain) in enumerate(gates):
            verdict = _gate(kind, outputs[rung])
            hits[("GATE", rung, g)] += 1
            if verdict == "abstain":
                hits[("ON ABSTAIN", rung, g)] += 1
                verdict = "pass" if on_abstain == "fail_open" else "fail"
            if verdict == "fail":
                break
        else:
            return rung
    return None


def _clause_lines(text: str) -> dict[tuple, int]:
    """(kind, rung, index) -> line of its GATE, found by reading the rubric text."""
    lines, rung, g = {}, None, 0
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if words[:1] == ["RUNG"]:
            rung, g = words[1], 0
        elif words[:1] == ["GATE"]:
            lines[("GATE", rung, g)] = number
            if words[1] == "subprocess":
                lines[("ON ABSTAIN", rung, g)] = number
            g += 1
    return lines


def test_gate_and_on_abstain_coverage_is_the_independent_count(admiss_cli, tmp_path):
    text = RUBRIC.format(python=json.dumps(sys.executable))
    (tmp_path / "pipeline.rubric").write_text(text)
    (tmp_path / "verdict.py").write_text(GATE_PROGRAM)
    hits = {key: 0 for key in _clause_lines(text)}
    cases = []
    for n, (draft, strong) in enumerate(CASES):
        served = _cascade({"draft": draft, "strong": strong}, hits)
        candidates = [{"rung": "draft", "model": "openai/gpt-5-mini", "output": draft},
                      {"rung": "strong", "model": "anthropic/claude-sonnet-5", "output": strong}]
        expect = f'served = "{served}"' if served else "exhausted = true"
        (tmp_path / f"case{n}.json").write_text(json.dumps({"evidence": [], "candidates": candidates}))
        cases.append(f'[[case]]\nname = "case {n}"\nbundle = "case{n}.json"\nexpect.chain = {{ {expect} }}\n')
    (tmp_path / "pipeline.rubric.test.toml").write_text("\n".join(cases))

    ran = admiss_cli("test", "--coverage", "--format", "json", ".")
    assert ran.code == 0, ran.out + ran.err
    (found,) = json.loads(ran.out)["coverage"]["files"]
    got = {(c["kind"], c["line"]): c["hits"] for c in found["clauses"]}
    lines = _clause_lines(text)
    assert got == {(key[0], lines[key]): n for key, n in hits.items()}
    # The cases take every branch at least once, and some more than once.
    assert min(hits.values()) >= 1 and max(hits.values()) >= 3
