"""Clause coverage of `admiss test --coverage`, against coverage this test works out on its own.

The expected numbers come from reading the fixture's source lines with plain string search
(no admiss parser) and classifying each case's evidence by the seed's rule, restated here:
FORBID first, then not ADMITted, then a REJECTed SHORTCUT label, else admitted; the DEFAULT
when nothing was admitted. The gates of the one implicit rung run when the bundle has an
output (every gate here passes on that case's output, so none stops the rung early), and
none abstains. Both are compared with what the real `admiss test` process prints and writes.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures"
RUBRIC = FIXTURES / "coverage.rubric"
TESTS = FIXTURES / "coverage.rubric.test.toml"


def _source_clauses() -> list[dict]:
    """Every clause of the fixture with its line and column, found by searching the text."""
    clauses, prop = [], None
    for number, line in enumerate(RUBRIC.read_text().splitlines(), start=1):
        words = line.split()
        if line.startswith("PROPERTY"):
            prop = {"name": words[1], "line": number, "admit": [], "forbid": [], "shortcuts": [], "default": None}
            clauses.append(prop)
        elif words[:1] in (["ADMIT"], ["FORBID"]) and prop is not None:
            for name in re.findall(r"[a-z_]+", line.split(None, 1)[1]):
                prop[words[0].lower()].append((name, number, line.index(name) + 1))
        elif words[:2] == ["REJECT", "SHORTCUT"]:
            for label in re.findall(r'"([^"]*)"', line):
                prop["shortcuts"].append((label, number, line.index(f'"{label}"') + 1))
        elif words[:1] == ["DEFAULT"]:
            prop["default"] = (words[1], number, line.index(words[1]) + 1)
        elif words[:1] == ["}"]:
            if prop is not None and prop["default"] is None:  # omitted: the property's own line
                prop["default"] = ("no", prop["line"], 1)
            prop = None
        elif words[:1] == ["GATE"]:
            clauses.append({"gate": words[1], "line": number, "column": line.index("GATE") + 1})
    return clauses


def _expected_hits() -> dict[tuple, int]:
    """(kind, text, line, column) -> hits, by the seed's rule over the test file's cases."""
    clauses = _source_clauses()
    props = [c for c in clauses if "name" in c]
    gates = [c for c in clauses if "gate" in c]
    hits: dict[tuple, int] = {}
    for p in props:
        hits.update({("ADMIT", k, ln, col): 0 for k, ln, col in p["admit"]})
        hits.update({("FORBID", k, ln, col): 0 for k, ln, col in p["forbid"]})
        hits.update({("REJECT SHORTCUT", json.dumps(k), ln, col): 0 for k, ln, col in p["shortcuts"]})
        hits[("DEFAULT", p["default"][0], p["default"][1], p["default"][2])] = 0
    for g in gates:
        hits[("GATE", g["gate"], g["line"], g["column"])] = 0
        if g["gate"] == "consistency":  # no ON ABSTAIN written: it stands at the GATE
            hits[("ON ABSTAIN", "fail_open (consistency)", g["line"], g["column"])] = 0

    def classify(p: dict, items: list[dict]) -> None:
        admit = {k: (ln, col) for k, ln, col in p["admit"]}
        forbid = {k: (ln, col) for k, ln, col in p["forbid"]}
        shortcuts = {k: (ln, col) for k, ln, col in p["shortcuts"]}
        admitted = False
        for item in items:
            if item["kind"] in forbid:
                hits[("FORBID", item["kind"], *forbid[item["kind"]])] += 1
            elif item["kind"] not in admit:
                continue
            elif item["source_label"] in shortcuts:
                hits[("REJECT SHORTCUT", json.dumps(item["source_label"]), *shortcuts[item["source_label"]])] += 1
            else:
                hits[("ADMIT", item["kind"], *admit[item["kind"]])] += 1
                admitted = True
        if not admitted:
            hits[("DEFAULT", *p["default"])] += 1

    for case in tomllib.loads(TESTS.read_text())["case"]:
        bundle = case["bundle"]
        for p in props:
            classify(p, bundle["evidence"])
        if "output" in bundle:
            for g in gates:
                hits[("GATE", g["gate"], g["line"], g["column"])] += 1
            # GATE admissibility alpha classifies alpha's evidence once more.
            classify(next(p for p in props if p["name"] == "alpha"), bundle["evidence"])
    return hits


def _copied(tmp_path: Path) -> Path:
    for name in ("coverage.rubric", "coverage.rubric.test.toml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


def test_json_coverage_is_the_independent_count(admiss_cli, tmp_path):
    _copied(tmp_path)
    ran = admiss_cli("test", "--coverage", "--format", "json", ".")
    assert ran.code == 0, ran.out + ran.err
    coverage = json.loads(ran.out)["coverage"]
    (found,) = coverage["files"]
    got = {(c["kind"], c["text"], c["line"], c["column"]): c["hits"] for c in found["clauses"]}
    expected = _expected_hits()
    assert got == expected
    covered = sum(1 for hits in expected.values() if hits)
    assert (found["covered"], found["total"]) == (covered, len(expected))
    assert found["percent"] == round(100 * covered / len(expected), 2)
    # The fixture leaves these out on purpose: a test that could not fail would show 100%.
    assert covered < len(expected)


def test_text_coverage_names_each_uncovered_clause_at_its_line(admiss_cli, tmp_path):
    _copied(tmp_path)
    ran = admiss_cli("test", "--coverage", ".")
    assert ran.code == 0
    expected = _expected_hits()
    uncovered = sorted((ln, col, kind, text) for (kind, text, ln, col), hits in expected.items() if not hits)
    listed = re.findall(r"not covered: coverage\.rubric:(\d+):(\d+): (ADMIT|FORBID|REJECT SHORTCUT|DEFAULT|GATE|"
                        r"ON ABSTAIN) (.+) \(", ran.out)
    assert sorted((int(ln), int(col), kind, text) for ln, col, kind, text in listed) == uncovered
    covered = len(expected) - len(uncovered)
    assert f"coverage.rubric: {covered}/{len(expected)} clauses covered" in ran.out


def test_lcov_has_a_branch_per_clause_and_a_line_per_clause_line(admiss_cli, tmp_path):
    _copied(tmp_path)
    assert admiss_cli("test", "--coverage", "--lcov", "out.lcov", ".").code == 0
    records = (tmp_path / "out.lcov").read_text().split("end_of_record\n")
    assert records[-1] == ""
    (record,) = records[:-1]
    assert "SF:coverage.rubric\n" in record
    expected = _expected_hits()
    by_line: dict[int, list[int]] = {}
    for (_, _, line, column), hits in sorted(expected.items(), key=lambda kv: (kv[0][2], kv[0][3])):
        by_line.setdefault(line, []).append(hits)
    da = {int(ln): int(h) for ln, h in re.findall(r"^DA:(\d+),(\d+)$", record, re.M)}
    assert da == {line: sum(hits) for line, hits in by_line.items()}
    brda = re.findall(r"^BRDA:(\d+),0,(\d+),(\d+)$", record, re.M)
    assert sorted((int(ln), int(h)) for ln, _, h in brda) == sorted((ln, h) for ln, hs in by_line.items() for h in hs)
    assert f"BRF:{len(expected)}\n" in record and f"BRH:{sum(1 for h in expected.values() if h)}\n" in record


@pytest.mark.parametrize("threshold, code", [("50", 0), ("99.5", 1)])
def test_threshold(admiss_cli, tmp_path, threshold, code):
    _copied(tmp_path)
    expected = _expected_hits()
    percent = 100 * sum(1 for h in expected.values() if h) / len(expected)
    assert 50 <= percent < 99.5  # the two thresholds stand on either side of the fixture's coverage
    ran = admiss_cli("test", "--threshold", threshold, ".")
    assert ran.code == code, ran.out + ran.err
    if code:
        assert f"coverage {percent:.1f}% is below --threshold {threshold}%" in ran.err
    assert not (tmp_path / "admiss-coverage.lcov").exists()  # only --coverage writes the file


def test_the_shipped_rubrics_tests_pass_at_full_coverage(admiss_cli):
    root = Path(__file__).resolve().parents[2]
    ran = admiss_cli("test", str(root / "rubrics"), "--threshold", "100", "--format", "json")
    assert ran.code == 0, ran.out[-3000:] + ran.err
    results = json.loads(ran.out)
    assert results["fail"] == results["error"] == 0 and results["pass"] >= 40
    shipped = sorted(p.name for p in (root / "rubrics").glob("*.rubric"))
    assert sorted(Path(f["rubric"]).name for f in results["files"]) == shipped


MAP_RUBRIC = FIXTURES / "map_coverage.rubric"
# Written by the openai client against a loopback stand-in (rubrics/traces/make_responses_traces.py).
TRACE = Path(__file__).resolve().parents[2] / "rubrics" / "traces" / "booking_cancellation" / \
    "looked_up_cancelled_refunded.responses.json"


def _expected_rule_hits() -> dict[int, int]:
    """Line of each WHEN rule -> the steps it decides, read from the trace's items directly:
    the first rule whose step type, tool pattern and outcome fit decides a step."""
    rules = []
    for number, line in enumerate(MAP_RUBRIC.read_text().splitlines(), start=1):
        words = line.split()
        if words[:1] == ["WHEN"]:
            tool = re.search(r'TOOL "([^"]+)"', line)
            rules.append({"line": number, "step": words[1], "tool": tool[1] if tool else None,
                          "ok_only": "OUTCOME ok" in line})
    trace = json.loads(TRACE.read_text())
    outputs = {i["call_id"]: i["output"] for i in trace["input"] if i.get("type") == "function_call_output"}
    steps = []
    for item in trace["input"] + trace["output"]:
        if item.get("type") == "function_call":
            failed = outputs[item["call_id"]].lower().startswith("error")
            steps.append(("TOOL", item["name"], not failed))
        elif item.get("type") == "reasoning":
            steps.append(("REASONING", None, True))
    steps.append(("FINAL", None, True))  # the last output message is the final answer
    hits = {rule["line"]: 0 for rule in rules}
    for kind, name, ok in steps:
        for rule in rules:
            if rule["step"] != kind or rule["ok_only"] and not ok:
                continue
            if rule["tool"] is not None and not re.fullmatch(rule["tool"].replace("*", ".*"), name):
                continue
            hits[rule["line"]] += 1
            break
    return hits


def test_map_rule_coverage_is_the_independent_count(admiss_cli, tmp_path):
    shutil.copy(MAP_RUBRIC, tmp_path / "map_coverage.rubric")
    (tmp_path / "map_coverage.rubric.test.toml").write_text(
        f'[[case]]\nname = "a trace"\ntrace = {json.dumps(str(TRACE))}\nexpect.properties = {{ cancelled = "yes" }}\n')
    ran = admiss_cli("test", "--coverage", "--format", "json", ".")
    assert ran.code == 0, ran.out + ran.err
    (found,) = json.loads(ran.out)["coverage"]["files"]
    got = {c["line"]: c["hits"] for c in found["clauses"] if c["kind"] == "MAP"}
    expected = _expected_rule_hits()
    assert got == expected
    assert 0 in expected.values() and max(expected.values()) >= 2  # one rule never fires, one fires twice
