"""Run the real `admiss lint` over the held-out ADM007 set and count its misses.

Black-box on purpose: every text goes into a rubric file of its own, as a user would write
it, and only what `admiss lint --format json` prints decides whether it was flagged.

    python tests/lint/heldout/adm007_heldout.py         # figures per half, and every miss
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

SET = Path(__file__).with_name("adm007_phrasings.toml")
ADMISS = Path(sys.executable).with_name("admiss")

RUBRIC = """CHAIN review {{
  RUNG draft MODEL "openai/gpt-5-mini" {{
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC {text}
      ON ABSTAIN fail_closed
  }}
}}
"""


def phrasings() -> list[dict]:
    return tomllib.loads(SET.read_text(encoding="utf-8"))["phrasing"]


def flagged_ids(items: list[dict]) -> set[str]:
    """The ids whose rubric `admiss lint --select ADM007` reports."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for item in items:
            # json.dumps writes exactly the JSON escapes a .rubric string takes.
            (folder / f"{item['id']}.rubric").write_text(
                RUBRIC.format(text=json.dumps(item["text"])), encoding="utf-8")
        run = subprocess.run([str(ADMISS), "lint", "--format", "json", "--select", "ADM007",
                              str(folder)], capture_output=True, text=True, timeout=300)
    if run.returncode not in (0, 1):
        raise RuntimeError(f"admiss lint exited {run.returncode}: {run.stderr}")
    findings = json.loads(run.stdout or "[]")
    codes = {f["code"] for f in findings}
    if codes - {"ADM007"}:
        raise RuntimeError(f"unexpected findings (a text did not compile?): {findings}")
    return {Path(f["file"]).stem for f in findings}


def misses(items: list[dict], flagged: set[str]) -> list[dict]:
    """Items whose expected class the rule got wrong."""
    return [i for i in items if (i["id"] in flagged) != (i["expect"] == "flag")]


def report(items: list[dict], flagged: set[str]) -> str:
    lines = []
    for half in ("A", "B"):
        part = [i for i in items if i["half"] == half]
        for expect, verb in (("flag", "flagged"), ("silent", "silent")):
            group = [i for i in part if i["expect"] == expect]
            right = len(group) - len(misses(group, flagged))
            lines.append(f"half {half}: {verb} when it should: {right}/{len(group)}")
        wrong = misses(part, flagged)
        clear = [i for i in wrong if not i.get("borderline")]
        lines.append(f"half {half}: misses {len(wrong)} ({len(clear)} on texts not marked borderline)")
        for i in wrong:
            mark = " [borderline]" if i.get("borderline") else ""
            lines.append(f"  {i['id']} expect {i['expect']}{mark}: {i['text']!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    every = phrasings()
    print(report(every, flagged_ids(every)))
