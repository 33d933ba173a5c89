"""Model gates need their provider before any bundle is checked; --offline runs without
model calls on purpose and says so; the README's first command verifies, skipping nothing
silently."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import admiss
from admiss.errors import AdmissError
from admiss.report.rich import print_report
from admiss.report.text import OFFLINE_LINE

ROOT = Path(__file__).resolve().parent.parent

RUBRIC = """\
PROPERTY sourced "Claims rest on a filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "blog post"
  DEFAULT no
}

CHAIN serve {
  GATE non_empty ON ABSTAIN fail_closed
  GATE judge MODEL "acme/grader-1" RUBRIC "Which claim is not in the filing? Score 0 if any."
    ON ABSTAIN fail_closed
  GATE consistency K 2 THRESHOLD 1.0
}
"""
EVIDENCE = [{"kind": "verified_external_source", "detail": "10-K names the operator.", "source_label": "10-K filing"}]
BUNDLE = {"rubric": "chain.rubric", "prompt": "Who operates it?", "evidence": EVIDENCE,
          "output": "Acme", "model": "maker/m-1", "samples": ["Acme", "acme"]}


@pytest.fixture
def chain_folder(tmp_path: Path) -> Path:
    (tmp_path / "chain.rubric").write_text(RUBRIC)
    (tmp_path / "a.json").write_text(json.dumps(BUNDLE))
    (tmp_path / "b.json").write_text(json.dumps(BUNDLE))
    return tmp_path


# ---------------------------------------------------------------- the error


def test_a_judge_without_a_provider_stops_the_cli_before_any_bundle(admiss_cli, chain_folder):
    ran = admiss_cli("check", "--rubric", "chain.rubric", "a.json", "b.json")
    assert ran.code == 2
    assert ran.out == ""  # no bundle was checked
    assert "Traceback" not in ran.err
    lines = ran.err.splitlines()
    assert lines[0] == ("chain.rubric:10:3: E140 judge gate on rung serve calls acme/grader-1, "
                        "but no [providers.acme] table in admiss.toml (none found beside the rubric "
                        "or in the working folder)")
    assert lines[1] == '    GATE judge MODEL "acme/grader-1" RUBRIC "Which claim is not in the filing? Score 0 if any."'
    assert lines[2].startswith("    ^^^^")
    assert "add [providers.acme] with its base_url to admiss.toml" in lines[3]
    assert "--offline" in lines[3]
    assert len(lines) == 4  # said once, not once per bundle


def test_the_rubric_named_by_a_bundle_is_checked_before_that_bundle(admiss_cli, chain_folder):
    ran = admiss_cli("check", "a.json")
    assert ran.code == 2 and ran.out == ""
    assert re.search(r"chain\.rubric:10:3: E140 .*\[providers\.acme\]", ran.err)


def test_the_api_raises_the_located_error(chain_folder):
    rubric = admiss.load(chain_folder / "chain.rubric")
    with pytest.raises(AdmissError) as caught:
        rubric.prepare()
    [diagnostic] = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E140", 10, 3)
    assert caught.value.exit_code == 2
    with pytest.raises(AdmissError, match=r"E140 judge gate on rung serve calls acme/grader-1"):
        rubric.check(BUNDLE)


def test_a_configured_provider_clears_the_error(chain_folder):
    # Nothing listens there: the check is about configuration, and --offline keeps the
    # judge from calling. Without --offline the judge would call, fail, and abstain.
    (chain_folder / "admiss.toml").write_text('[providers.acme]\nbase_url = "http://127.0.0.1:9/v1"\n')
    rubric = admiss.load(chain_folder / "chain.rubric")
    rubric.prepare()
    rubric.close()


def test_resampling_from_an_unconfigured_candidate_model_is_the_same_error(admiss_cli, chain_folder):
    no_samples = {key: value for key, value in BUNDLE.items() if key != "samples"}
    (chain_folder / "resample.json").write_text(json.dumps(no_samples))
    (chain_folder / "admiss.toml").write_text('[providers.acme]\nbase_url = "http://127.0.0.1:9/v1"\n')
    ran = admiss_cli("check", "resample.json")
    assert ran.code == 2 and ran.out == ""
    assert ran.err.splitlines()[0].startswith(
        "chain.rubric:12:3: E140 consistency gate on rung serve (no samples in the bundle, so it draws new "
        "ones from the candidate's model) calls maker/m-1, but no [providers.maker] table in ")


def test_bundle_samples_need_no_provider_for_consistency(tmp_path):
    rubric = admiss.compile_source(RUBRIC.replace("  GATE judge", "  # GATE judge").replace(
        "    ON ABSTAIN fail_closed\n  GATE consistency", "  GATE consistency"), "c.rubric")
    report = rubric.check(BUNDLE)
    assert report.verdict == "pass"
    assert "offline" not in report.to_dict()


# ---------------------------------------------------------------- the offline run


def test_offline_text_says_so_first_and_the_judge_abstains_offline(admiss_cli, chain_folder):
    ran = admiss_cli("check", "--offline", "--format", "text", "a.json")
    assert ran.code == 1, ran.err
    lines = ran.out.splitlines()
    assert lines[0] == OFFLINE_LINE
    assert lines[1] == "property: Claims rest on a filing"
    assert "  gate judge: abstain -> fail (offline: judge acme/grader-1 not called)" in lines
    # Samples in the bundle need no model: consistency still decides.
    assert any(line.startswith("  gate consistency: pass score=1") for line in lines) or \
        "  gate consistency: skipped (cancelled: another gate on the rung failed)" in lines


def test_offline_json_has_a_top_level_field_and_the_receipt_says_so(admiss_cli, chain_folder):
    ran = admiss_cli("check", "--offline", "--format", "json", "a.json")
    report = json.loads(ran.out)
    assert report["offline"] is True and list(report)[:3] == ["bundle", "rubric", "offline"]
    assert report["chain"]["offline"] is True and list(report["chain"])[0] == "offline"
    [judge] = [g for g in report["chain"]["rungs"][0]["gates"] if g["gate"] == "judge"]
    assert (judge["verdict"], judge["effective"]) == ("abstain", "fail")
    assert judge["reason"].startswith("offline")


def test_offline_json_lines_match_the_single_report(admiss_cli, chain_folder):
    one = json.loads(admiss_cli("check", "--offline", "--format", "json", "a.json").out)
    batch = [json.loads(line) for line in admiss_cli("check", "--offline", "--format", "json", "a.json",
                                                      "b.json").out.splitlines()]
    for report in (one, *batch):
        report["chain"]["rungs"][0]["gates"] = [{**g, "duration_ms": 0} for g in report["chain"]["rungs"][0]["gates"]]
    assert [r["offline"] for r in batch] == [True, True]
    assert {**batch[0], "bundle": "a.json"} == one


def test_offline_rich_shows_a_banner(chain_folder):
    rubric = admiss.load(chain_folder / "chain.rubric", offline=True)
    report = rubric.check(BUNDLE, name="a.json")
    rubric.close()
    out = io.StringIO()
    from rich.console import Console

    print_report(report, Console(file=out, width=200, color_system=None))
    drawn = out.getvalue().splitlines()
    banner = next(i for i, line in enumerate(drawn) if "OFFLINE" in line)
    assert OFFLINE_LINE in drawn[banner + 1]
    assert banner < next(i for i, line in enumerate(drawn) if "Claims rest on a filing" in line)


def test_offline_leaves_a_rubric_without_chains_byte_exact(admiss_cli, tmp_path):
    (tmp_path / "p.rubric").write_text(RUBRIC.split("CHAIN")[0])
    (tmp_path / "p.json").write_text(json.dumps({"rubric": "p.rubric", "evidence": EVIDENCE}))
    plain = admiss_cli("check", "--format", "text", "p.json")
    offline = admiss_cli("check", "--offline", "--format", "text", "p.json")
    assert offline.out == plain.out and offline.code == plain.code == 0
    assert "offline" not in admiss_cli("check", "--offline", "--format", "json", "p.json").out


def test_offline_is_not_the_default(chain_folder):
    assert admiss.load(chain_folder / "chain.rubric").offline is False


# ---------------------------------------------------------------- the README's first command


def _first_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    return next(line for line in block.splitlines() if line and not line.startswith("#"))


def _admiss_parts(command: str) -> list[list[str]]:
    parts = re.split(r"\s*(?:&&|;)\s*", command)
    return [shlex.split(part)[1:] for part in parts if part.startswith("admiss ")]


def _gates_passed_unrun(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.match(r"\s+gate \w+: (abstain|skipped) -> pass", line)]


def test_readme_first_command_shows_verification_and_skips_nothing_silently():
    command = _first_command()
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && ")
    runs = []
    for args in _admiss_parts(command):
        proc = subprocess.run([sys.executable, "-m", "admiss", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "NO_COLOR": "1"})
        assert "Traceback" not in proc.stderr
        runs.append((args, proc))
    assert [args[0] for args, _ in runs] == ["check", "check"]
    (_, shortcut), (offline_args, chain) = runs
    # The seed's report: the 8-K exhibit is named as a rejected shortcut, and the check fails.
    assert shortcut.returncode == 1
    assert shortcut.stdout == (ROOT / "rubrics/bundles/sec_filings/eight_k_shortcut.expected.txt").read_text() + "\n"
    assert "(shortcut-rejected)" in shortcut.stdout
    # The chain, offline: the run says so first, the judge says why it did not run, and no
    # gate passed without running.
    assert "--offline" in offline_args
    assert chain.returncode == 1, chain.stderr
    assert chain.stdout.splitlines()[0] == OFFLINE_LINE
    assert "  gate judge: abstain -> fail (offline: judge openai/gpt-5 not called)" in chain.stdout
    for _, proc in runs:
        passed_unrun = _gates_passed_unrun(proc.stdout)
        assert not passed_unrun or proc.stdout.startswith(OFFLINE_LINE), passed_unrun


def test_the_ci_script_still_runs_the_readmes_second_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands[1] in (ROOT / ".ci/run").read_text(encoding="utf-8")


def test_offline_follows_the_rubric_into_worker_processes(chain_folder):
    import pickle

    rubric = admiss.load(chain_folder / "chain.rubric", offline=True)
    again = pickle.loads(pickle.dumps(rubric))
    assert again.offline is True
    [report] = list(admiss.check_many(again, [BUNDLE]))
    assert report.to_dict()["offline"] is True


def test_offline_abstains_are_not_errors_so_no_budget_is_spent(chain_folder):
    # Twenty offline bundles: an abstain on purpose is no malfunction, so the judge is never disabled.
    with admiss.load(chain_folder / "chain.rubric", offline=True) as rubric:
        reports = [rubric.check(BUNDLE).to_dict() for _ in range(20)]
    judges = [g for r in reports for g in r["chain"]["rungs"][0]["gates"] if g["gate"] == "judge"]
    assert len(judges) == 20
    assert all(g["verdict"] == "abstain" and not g["disabled"] for g in judges)
