"""The README's promise: whatever file admiss is handed, it answers with a report or a located
error (exit 0, 1 or 2), never a Python traceback.

Every fixture file under tests/ (rubrics, bundles, expected outputs, error goldens, the fuzz
corpus) goes through the real command line, many files per invocation.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = sorted(p for p in TESTS.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
                  and "__pycache__" not in p.parts)
RUBRICS = [p for p in FIXTURES if p.suffix == ".rubric"]
CORPUS_RUBRIC = TESTS / "fuzz" / "corpus" / "rubrics" / "chain.rubric"
CORPUS_BUNDLES = sorted((TESTS / "fuzz" / "corpus" / "bundles").iterdir())

# Each row: a command line run over many fixture files at once.
RUNS = {
    "lint every rubric": ["lint", "-f", "json", *RUBRICS],
    "fmt --check every rubric": ["fmt", "--check", *RUBRICS],
    "check every file by its own rubric field": ["check", "-f", "text", *FIXTURES],
    "check every file against the corpus rubric": ["check", "-f", "text", "--rubric", CORPUS_RUBRIC, *FIXTURES],
    "check every file in the rich format": ["check", "-f", "rich", "--rubric", CORPUS_RUBRIC, *FIXTURES],
    "check every file in the JSON format": ["check", "-f", "json", "--rubric", CORPUS_RUBRIC, *FIXTURES],
    "check every file in the full JSON format": ["check", "-f", "json", "--report", "full", "--rubric",
                                                 CORPUS_RUBRIC, *FIXTURES],
    **{f"each corpus bundle as a rubric: {p.name}": ["check", "-f", "text", "--rubric", p, CORPUS_BUNDLES[0]]
       for p in CORPUS_BUNDLES},
    **{f"compile {p.relative_to(TESTS)}": ["compile", p] for p in sorted((TESTS / "fuzz" / "corpus").rglob("*.*"))},
}


def test_the_sweep_covers_the_fixtures():
    assert len(FIXTURES) > 300 and len(RUBRICS) > 100


@pytest.mark.parametrize("name", sorted(RUNS))
def test_no_traceback(name, tmp_path):
    # The working folder is empty: no admiss.toml configures a provider, so nothing is called.
    proc = subprocess.run([sys.executable, "-m", "admiss", *map(str, RUNS[name])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1, 2), proc.stderr[-3000:]
