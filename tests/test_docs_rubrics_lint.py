"""Every rubric shown in README.md and docs/ passes ``admiss lint`` (issue 21, item 8), and
every file it names exists, unless its fence marks it as a bad example.

Fence info strings (see also tests/test_docs_examples.py):

- ```rubric               a rubric a reader may copy: it must lint clean, and each gate file
                           or program it names must be a ``file=`` block of the same page
                           (written beside it before it is linted) or a file of the repository.
- ```rubric bad-example   shows what not to write (a lint rule's "Example"); not linted.
- ```rubric error E101    must fail to compile with those codes; not linted.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import admiss
from admiss.lint import LintConfig, lint_source

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "lint").glob("*.md")),
         *sorted((ROOT / "docs" / "integrations").glob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
# The first line of a rubric, whatever its fence says: a comment or a top-level keyword.
LOOKS_LIKE_A_RUBRIC = re.compile(r"\A(?:\s*#[^\n]*\n)*\s*(RUBRIC|PROPERTY|CHAIN|KINDS|MAP)\b")


def _is_a_rubric(body: str) -> bool:
    """A fence's text compiles as a rubric (a syntax synopsis such as ``KINDS name, ...``
    does not, and is left alone)."""
    if not LOOKS_LIKE_A_RUBRIC.match(body):
        return False
    try:
        admiss.compile_source(body, "t.rubric")
    except admiss.AdmissError:
        return False
    return True


def _fences(page: Path) -> list[tuple[int, list[str], str]]:
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1).split(), m.group(2)) for m in FENCE.finditer(text)]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


EXAMPLES = [(page, line, words, body) for page in PAGES for line, words, body in _fences(page)
            if words[:1] == ["rubric"] and "error" not in words and "bad-example" not in words]


def test_the_extraction_finds_the_rubrics():
    # Guards the extraction: a broken pattern must not pass by finding nothing.
    assert len(EXAMPLES) >= 40
    assert any(page.name == "README.md" for page, *_ in EXAMPLES)
    assert any(page.parent.name == "lint" for page, *_ in EXAMPLES)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_rubric_block_says_it_is_one(page):
    # A rubric in an unlabelled fence (or ```text) would escape both this test and the reader's eye.
    unlabelled = [line for line, words, body in _fences(page)
                  if words[:1] != ["rubric"] and _is_a_rubric(body)]
    assert not unlabelled, f"{_name(page)}: fences at lines {unlabelled} hold a rubric: write ```rubric"


def _scratch(page: Path, upto: int, folder: Path) -> Path:
    """The page's file= blocks above line ``upto``, written into ``folder``, beside the
    repository's own rubrics/ (docs name files such as rubrics/tests/run_tests.py)."""
    shutil.copytree(ROOT / "rubrics", folder / "rubrics")
    for line, words, body in _fences(page):
        name = next((w[5:] for w in words if w.startswith("file=")), None)
        if name and line < upto:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(body, encoding="utf-8")
    return folder


@pytest.mark.parametrize("page,line,words,body", EXAMPLES, ids=[f"{_name(p)}:{n}" for p, n, _, _ in EXAMPLES])
def test_rubric_example_lints_clean(page, line, words, body, tmp_path):
    name = next((w[5:] for w in words if w.startswith("file=")), "example.rubric")
    folder = _scratch(page, line, tmp_path)
    where = (folder / name).parent
    where.mkdir(parents=True, exist_ok=True)
    found = lint_source(body, name, LintConfig(), folder=where)
    assert not found, f"{_name(page)}:{line}:\n" + "\n".join(d.render() for d in found)


# A path into the repository's examples, as a page names it in prose, a command or code.
EXAMPLE_PATH = re.compile(r"(?<![\w/.-])rubrics/[\w./-]*\.(?:rubric|jsonl?|toml)\b")


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_example_path_a_page_names_exists(page):
    # Either a file of the repository (README's commands run from its root) or one a page
    # writes as a file= block (a message quoted from another page names its file).
    written = {w[5:] for other in PAGES for _, words, _ in _fences(other) for w in words if w.startswith("file=")}
    named = set(EXAMPLE_PATH.findall(page.read_text(encoding="utf-8")))
    missing = sorted(p for p in named if p not in written and not (ROOT / p).exists())
    assert not missing, f"{_name(page)} names files that do not exist: {missing}"
