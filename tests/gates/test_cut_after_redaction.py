"""Issue 18, item 2: every cut of a text admiss did not write is made after redaction, so a
secret straddling the cut keeps no part. One case per cut: a gate program's stdout preview
and stderr tail, a consistency cluster's representative answer, a trace step's detail, a
savings message's quoted value, a diagnostic's source line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gatekit import gate, run_gate

from admiss.config import Config
from admiss.errors import Diagnostic
from admiss.gates import subprocess as subprocess_gate
from admiss.gates.base import ABSTAIN, Candidate, GateContext
from admiss.gates.meaning import REPRESENTATIVE_CHARS, Asker
from admiss.source import SNIPPET_WIDTH, Source, Span
from admiss.traces.mapping import DETAIL_CHARS, default_detail
from admiss.traces.steps import FINAL_ANSWER, Step, StepRef

KEY = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"
HEAD = KEY[:10]  # what a cut before redaction would leave of it
USERINFO = "alice:hunter2-long-password"


def _across(cut: int, secret: str) -> str:
    """Text that puts ``secret`` across character ``cut``."""
    return "x" * (cut - len(secret) // 2) + secret + " and more text after it" * 20


def _program(tmp_path: Path, stdout: str = "", stderr: str = "", status: int = 0):
    script = tmp_path / "prog.py"
    script.write_text(f"import sys\nsys.stdout.write({stdout!r})\nsys.stderr.write({stderr!r})\nsys.exit({status})\n")
    return gate("subprocess", cmd=(sys.executable, str(script)))


def _run(g, tmp_path: Path, secrets: tuple[str, ...] = ()):
    ctx = GateContext(tmp_path, Config(), secrets=secrets)
    return run_gate(subprocess_gate.build(g, ctx), Candidate(output="42"), ctx)


def test_a_key_across_the_stdout_preview_cut_is_masked_whole(tmp_path):
    result = _run(_program(tmp_path, stdout=_across(120, KEY)), tmp_path, (KEY,))
    assert result.verdict == ABSTAIN and "stdout is not JSON" in result.reason
    assert HEAD not in result.reason and "***" in result.reason, result.reason


def test_a_url_user_info_across_the_stdout_preview_cut_is_masked_without_any_configured_secret(tmp_path):
    result = _run(_program(tmp_path, stdout=_across(120, f"https://{USERINFO}@host/v1")), tmp_path)
    assert "alice" not in result.reason and "https://***@" in result.reason, result.reason


def test_a_key_across_the_start_of_the_stderr_tail_is_masked_whole(tmp_path):
    stderr = "y" * 50 + KEY + "z" * (subprocess_gate.STDERR_TAIL_BYTES - len(KEY) // 2)  # the tail starts mid-key
    result = _run(_program(tmp_path, stderr=stderr, status=3), tmp_path, (KEY,))
    assert "exited with status 3" in result.reason
    assert KEY[-10:] not in result.reason and "***" in result.reason, result.reason


def test_a_key_across_the_representative_cut_is_masked_whole(tmp_path):
    ctx = GateContext(tmp_path, Config(), secrets=(KEY,))
    asker = Asker("fake/meaning", "task", [_across(REPRESENTATIVE_CHARS, KEY), "other"], ctx)
    shown = asker.receipt([[0], [1]])["clusters"][0]["representative"]
    assert HEAD not in shown and "***" in shown, shown


def test_a_url_user_info_across_a_trace_detail_cut_is_masked_whole():
    detail = default_detail(Step(FINAL_ANSWER, StepRef("test", "steps[0]", message_index=0), text=_across(DETAIL_CHARS, f"https://{USERINFO}@host/")))
    assert "alice" not in detail and "https://***@" in detail, detail


def test_a_url_user_info_across_a_savings_quote_cut_is_masked_whole(admiss_cli, tmp_path):
    record = {"chain": {"name": "c", "served": None, "rungs": [
        {"rung": "r", "model": None, "cost_usd": 0.0, "outcome": f"https://{USERINFO}{'-' * 20}@host/", "gates": []}]},
        "usage": [], "top_rung": {"rung": "r"}}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ran = admiss_cli("savings", path)
    assert ran.code == 2 and "outcome: must be one of" in ran.err
    assert "alice" not in ran.err and "***@" in ran.err, ran.err


def test_a_url_user_info_across_the_snippet_window_is_masked_whole():
    line = "x" * (SNIPPET_WIDTH - 16) + f"https://{USERINFO}@host/" + "y" * 50  # the window ends at "alice:h"
    shown = Diagnostic("E170", "bad", Span.point(1, 5), file="f.json").render(Source("f.json", line))
    assert "alice" not in shown and "https://****" in shown, shown
