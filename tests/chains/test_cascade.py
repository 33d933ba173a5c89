"""The cascade with real gates: rung order, ON ABSTAIN, cheap-first, concurrency, cancel,
error budgets across a batch, and receipts. Rubrics and scripts are real files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import admiss

SCRIPTS = Path(__file__).parent / "scripts"
GATE_SCRIPTS = Path(__file__).parent.parent / "gates" / "scripts"
PY = json.dumps(sys.executable)

PROPERTY = """
PROPERTY sourced "Sourced" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "blog post"
  DEFAULT no
}
"""
SOURCE = {"kind": "verified_external_source", "detail": "filing says so", "source_label": "10-K filing"}


def _script(path: Path, *args: str) -> str:
    return "CMD [" + ", ".join(json.dumps(a) for a in (sys.executable, str(path), *args)) + "]"


def _rubric(tmp_path: Path, chain: str) -> admiss.Rubric:
    path = tmp_path / "r.rubric"
    path.write_text(PROPERTY + chain)
    return admiss.load(path)


def _candidate(rung: str, output: str, **extra) -> dict:
    return {"rung": rung, "model": f"m/{rung}", "output": output, **extra}


def _gates(report, rung: int) -> list[tuple[str, str, str]]:
    return [(g["gate"], g["verdict"], g["effective"]) for g in report.to_dict()["chain"]["rungs"][rung]["gates"]]


TWO_RUNGS = """
CHAIN serve {
  RUNG draft { GATE non_empty ON ABSTAIN fail_closed
               GATE json_valid ON ABSTAIN fail_closed }
  RUNG strong { GATE non_empty ON ABSTAIN fail_closed }
}
"""


def test_a_failing_first_rung_escalates_and_the_second_serves(tmp_path):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    report = rubric.check({"candidates": [_candidate("draft", "not json", cost_usd=0.001),
                                          _candidate("strong", "an answer", cost_usd=0.01)]})
    chain = report.to_dict()["chain"]
    assert [(r["rung"], r["outcome"]) for r in chain["rungs"]] == [("draft", "escalated"), ("strong", "served")]
    assert chain["served"] == "strong" and report.verdict == "pass"
    assert _gates(report, 0) == [("non_empty", "pass", "pass"), ("json_valid", "fail", "fail")]


def test_a_passing_first_rung_serves_and_stops(tmp_path):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    report = rubric.check({"candidates": [_candidate("draft", "{}"), _candidate("strong", "")]})
    chain = report.to_dict()["chain"]
    assert chain["served"] == "draft" and [r["rung"] for r in chain["rungs"]] == ["draft"]


def test_the_last_rung_failing_exhausts_the_chain(tmp_path):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    report = rubric.check({"evidence": [SOURCE], "candidates": [_candidate("draft", ""), _candidate("strong", " ")]})
    chain = report.to_dict()["chain"]
    assert [r["outcome"] for r in chain["rungs"]] == ["escalated", "exhausted"]
    assert chain["served"] is None
    # The chain decides the verdict even though every property holds.
    assert report.aggregate == "pass" and report.verdict == "fail"


@pytest.mark.parametrize("policy, served", [("fail_open", "draft"), ("fail_closed", "strong"), ("", "draft")])
def test_on_abstain_policy_decides_what_an_abstain_counts_as(tmp_path, policy, served):
    abstain = _script(GATE_SCRIPTS / "crash.py")
    on_abstain = f"ON ABSTAIN {policy}" if policy else ""
    rubric = _rubric(tmp_path, f"""
CHAIN c {{
  RUNG draft {{ GATE subprocess {abstain} TIMEOUT 10s {on_abstain} }}
  RUNG strong {{ GATE non_empty }}
}}""")
    report = rubric.check({"candidates": [_candidate("draft", "x"), _candidate("strong", "y")]})
    gate = report.to_dict()["chain"]["rungs"][0]["gates"][0]
    assert gate["verdict"] == "abstain"
    assert gate["effective"] == ("fail" if policy == "fail_closed" else "pass")
    assert report.to_dict()["chain"]["served"] == served


def test_a_fail_in_a_cheap_gate_starts_no_subprocess(tmp_path):
    marker = tmp_path / "started"
    # Written before the cheap gate on purpose: cheap gates still run first.
    rubric = _rubric(tmp_path, f"""
CHAIN c {{
  GATE subprocess {_script(SCRIPTS / "marker.py", str(marker), '{"verdict": "pass"}')} TIMEOUT 10s
  GATE json_valid
}}""")
    report = rubric.check({"output": "not json"})
    assert report.verdict == "fail"
    assert not marker.exists()
    assert _gates(report, 0) == [("subprocess", "skipped", "skipped"), ("json_valid", "fail", "fail")]


def test_costly_gates_on_a_rung_run_concurrently(tmp_path):
    folder = tmp_path / "barrier"
    folder.mkdir()
    gates = "\n".join(
        f"  GATE subprocess {_script(SCRIPTS / 'barrier.py', str(folder), '3', name)} TIMEOUT 20s"
        for name in ("a", "b", "c")
    )
    rubric = _rubric(tmp_path, f"CHAIN c {{\n{gates}\n}}")
    report = rubric.check({"output": "x"})
    assert [g["reason"] for g in report.to_dict()["chain"]["rungs"][0]["gates"]] == [
        f"{name} ran alongside the others" for name in ("a", "b", "c")]
    assert report.verdict == "pass"


def test_the_first_fail_cancels_the_other_costly_gates_and_kills_them(tmp_path):
    sys.path.insert(0, str(GATE_SCRIPTS.parent))
    from gatekit import kill_leftovers
    from processes import gone_within

    pid_file = tmp_path / "sleeper.pid"
    rubric = _rubric(tmp_path, f"""
CHAIN c {{
  GATE subprocess {_script(SCRIPTS / "sleeper.py", str(pid_file))} TIMEOUT 60s
  GATE subprocess {_script(SCRIPTS / "marker.py", str(tmp_path / "m"), '{"verdict": "fail"}', str(pid_file))} TIMEOUT 60s
}}""")
    report = rubric.check({"output": "x"})
    # The failing gate waited for the sleeper to start, so there is a process to kill.
    pid = int(pid_file.read_text())
    try:
        gates = report.to_dict()["chain"]["rungs"][0]["gates"]
        assert [(g["verdict"], g["reason"].split(":")[0]) for g in gates] == [("skipped", "cancelled"),
                                                                           ("fail", "")]
        assert gone_within([pid], 10)
    finally:
        kill_leftovers([pid])


def test_admissibility_gate_reads_the_candidates_evidence_and_reports_properties(tmp_path):
    rubric = _rubric(tmp_path, """
CHAIN c {
  RUNG draft { GATE admissibility sourced }
  RUNG strong { GATE admissibility }
}""")
    shortcut = {**SOURCE, "source_label": "blog post"}
    report = rubric.check({"evidence": [shortcut], "candidates": [
        _candidate("draft", "a"), _candidate("strong", "b", evidence=[SOURCE])]})
    rungs = report.to_dict()["chain"]["rungs"]
    assert [r["outcome"] for r in rungs] == ["escalated", "served"]
    draft_props = rungs[0]["gates"][0]["properties"]
    assert draft_props[0]["excluded"][0]["reason"] == "shortcut-rejected"
    assert rungs[1]["gates"][0]["properties"][0]["evidence"] == ["filing says so"]
    # The candidate's own evidence is not the bundle's: the top-level property still fails.
    assert report.aggregate == "fail"


def test_error_budget_disables_a_flaky_gate_across_a_batch_and_says_so(tmp_path):
    rubric = _rubric(tmp_path, f"""
CHAIN c {{
  GATE subprocess {_script(GATE_SCRIPTS / "crash.py")} TIMEOUT 10s BUDGET 0.5 WINDOW 4
}}""")
    gates = [rubric.check({"output": "x"}).to_dict()["chain"]["rungs"][0]["gates"][0] for _ in range(7)]
    disabled = [g["disabled"] for g in gates]
    first_off = disabled.index(True)
    assert all(disabled[first_off:]) and not any(disabled[:first_off])
    assert "error budget" in gates[first_off]["reason"]
    assert gates[first_off]["verdict"] == "skipped"


def test_receipt_sums_model_and_gate_spend_apart(tmp_path):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    report = rubric.check({"candidates": [_candidate("draft", "x", cost_usd=0.25),
                                          _candidate("strong", "y", cost_usd=0.5)]}).to_dict()
    chain = report["chain"]
    assert chain["model_cost_usd"] == pytest.approx(0.75)
    assert chain["gate_cost_usd"] == pytest.approx(sum(g["gate_cost_usd"] for r in chain["rungs"] for g in r["gates"]))
    assert all(set(g) >= {"gate", "verdict", "effective", "score", "reason", "duration_ms", "gate_cost_usd",
                          "disabled"} for r in chain["rungs"] for g in r["gates"])


def test_subprocess_wall_time_is_priced_on_the_receipt(tmp_path):
    (tmp_path / "admiss.toml").write_text("[gates]\nsubprocess_usd_per_second = 1000.0\n")
    passing = _script(GATE_SCRIPTS / "reply.py", '{"verdict": "pass"}')
    rubric = _rubric(tmp_path, f"CHAIN c {{ GATE subprocess {passing} }}")
    chain = rubric.check({"output": "x"}).to_dict()["chain"]
    gate = chain["rungs"][0]["gates"][0]
    assert gate["gate_cost_usd"] > 0
    assert chain["gate_cost_usd"] == pytest.approx(gate["gate_cost_usd"])
    assert chain["model_cost_usd"] == 0


def test_a_rung_without_a_candidate_cannot_serve(tmp_path):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    report = rubric.check({"candidates": [_candidate("draft", "x")]}).to_dict()["chain"]
    assert report["rungs"][1]["outcome"] == "exhausted"
    assert report["rungs"][1]["gates"][0]["reason"].startswith("not run: the bundle has no candidate")


@pytest.mark.parametrize("bundle, message", [
    ({"candidates": [_candidate("drfat", "x")]}, "candidates[0].rung: no RUNG 'drfat' in the chain"),
])
def test_bundle_naming_an_unknown_rung_is_rejected(tmp_path, bundle, message):
    rubric = _rubric(tmp_path, TWO_RUNGS)
    with pytest.raises(admiss.AdmissError) as caught:
        rubric.check(bundle)
    assert message in caught.value.render()


def test_several_chains_need_a_choice(tmp_path):
    rubric = _rubric(tmp_path, "CHAIN a { GATE non_empty }\nCHAIN b { GATE json_valid }")
    with pytest.raises(admiss.AdmissError) as caught:
        rubric.check({"output": "text"})
    assert "E003" in caught.value.render()
    assert rubric.check({"output": "text"}, chain="a").verdict == "pass"
    assert rubric.check({"output": "text"}, chain="b").verdict == "fail"


def test_a_gate_that_raises_is_an_abstain_not_a_crash(tmp_path, monkeypatch):
    from admiss.gates import non_empty

    def broken(gate, ctx):
        def run(candidate):
            raise RuntimeError("bug in a gate")

        return non_empty.GateCheck(kind="non_empty", cheap=True, run=run)

    monkeypatch.setattr(non_empty, "build", broken)
    rubric = _rubric(tmp_path, "CHAIN c { GATE non_empty ON ABSTAIN fail_closed }")
    gate = rubric.check({"output": "x"}).to_dict()["chain"]["rungs"][0]["gates"][0]
    assert gate["verdict"] == "abstain" and gate["effective"] == "fail"
    assert "RuntimeError: bug in a gate" in gate["reason"]
