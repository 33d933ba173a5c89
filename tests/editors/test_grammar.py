"""The TextMate grammar (editors/rubric.tmLanguage.json), run by vscode-textmate, VS Code's own
engine: every token admiss's lexer finds in the shipped rubrics and in docs/language.md's
examples gets the scope of its kind, and the whole tokenization is kept as snapshots."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from admiss.errors import RubricSyntaxError
from admiss.parser import expected_after, parse_with_comments
from admiss.source import Source
from admiss.lsp.words import KEYWORDS

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "editors" / "test"
SNAPSHOTS = Path(__file__).parent / "snapshots"


def _engine_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (.ci/run installs it)"
    if not (ENGINE / "node_modules" / "vscode-textmate").is_dir():
        return "vscode-textmate is not installed: npm ci --prefix editors/test"
    return None


if _engine_missing() and os.environ.get("CI"):
    raise RuntimeError(f"the grammar tests must run in CI: {_engine_missing()}")
pytestmark = pytest.mark.skipif(_engine_missing() is not None, reason=_engine_missing() or "")


def comments(name: str, text: str):
    """The comments of a text that parses, else None (an example of a syntax error)."""
    try:
        return parse_with_comments(Source(name, text))[1]
    except RubricSyntaxError:
        return None


def corpus() -> dict[str, str]:
    """The shipped rubrics, docs/language.md's examples, and the rubrics beside this file
    (constructs the page shows that neither of the others writes)."""
    files = sorted((ROOT / "rubrics").glob("*.rubric")) + sorted(Path(__file__).parent.glob("*.rubric"))
    out = {p.name: p.read_text(encoding="utf-8") for p in files}
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    for number, fence in enumerate(re.findall(r"^```rubric[^\n]*\n(.*?)^```", page, re.S | re.M)):
        out[f"language.md-{number:02d}"] = fence
    return out


@pytest.fixture(scope="module")
def tokenized() -> dict[str, list]:
    texts = corpus()
    ran = subprocess.run(["node", str(ENGINE / "tokenize.js")], input=json.dumps(list(texts.values())),
                         capture_output=True, text=True, timeout=120, check=True)
    return dict(zip(texts, json.loads(ran.stdout)))


def scope_at(tokens: list, line: int, column: int) -> str:
    """The innermost scope at a 0-based line and UTF-16 column."""
    for row, start, end, scopes in tokens:
        if row == line and start <= column < end:
            return scopes[-1]
    raise AssertionError(f"no token at {line}:{column}")


def utf16(text: str, line: int, column: int) -> int:
    return len(text.split("\n")[line - 1][:column - 1].encode("utf-16-le")) // 2


EXPECTED = {"STRING": "string.quoted.double.rubric", "NUMBER": "constant.numeric", "DURATION": "constant.numeric",
            "PATH": "variable.other.path.rubric"}


def expected_scope(token) -> str | None:
    if token.type.lstrip("_") in KEYWORDS:
        return "keyword."
    return EXPECTED.get(token.type)


def test_every_token_gets_the_scope_of_its_kind(tokenized):
    checked = 0
    for name, text in corpus().items():
        lexed = expected_after(text)
        if lexed is None:
            continue  # an example of a syntax error
        for token in lexed[0]:
            scope = scope_at(tokenized[name], token.line - 1, utf16(text, token.line, token.column))
            wanted = expected_scope(token)
            if token.type == "STRING":
                assert scope.startswith("punctuation.definition.string.begin"), (name, token, scope)
            elif wanted is not None:
                assert scope.startswith(wanted), (name, str(token), token.line, scope)
            elif token.type == "NAME":
                assert not scope.startswith(("keyword", "string", "comment", "invalid")), (name, str(token), scope)
            checked += 1
        for comment in comments(name, text) or ():
            scope = scope_at(tokenized[name], comment.span.line - 1, utf16(text, comment.span.line, comment.span.column))
            assert scope == "comment.line.number-sign.rubric", (name, comment)
    assert checked > 1000


def test_no_text_that_parses_is_marked_invalid(tokenized):
    for name, text in corpus().items():
        if comments(name, text) is not None:
            assert not [t for t in tokenized[name] if any(s.startswith("invalid") for s in t[3])], name


def test_a_bad_escape_and_an_unclosed_string_are_marked():
    ran = subprocess.run(["node", str(ENGINE / "tokenize.js")], input=json.dumps(['PROPERTY p "bad \\q"\nX "open']),
                         capture_output=True, text=True, timeout=120, check=True)
    tokens = json.loads(ran.stdout)[0]
    assert scope_at(tokens, 0, 16) == "invalid.illegal.escape.rubric"
    assert scope_at(tokens, 1, 0) != "string.quoted.double.rubric"  # the string ended with its line


def snapshot(text: str, tokens: list) -> str:
    lines, out = text.split("\n"), []
    for number, line in enumerate(lines):
        out.append(f"> {line}")
        for row, start, end, scopes in tokens:
            if row == number and scopes[1:] and line[start:end].strip():
                out.append(f"  {start:>3}-{end:<3} {line[start:end]!r:<32} {' '.join(scopes[1:])}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", list(corpus()))
def test_snapshot(tokenized, name):
    """A change of scopes shows here; ADMISS_UPDATE_SNAPSHOTS=1 writes the new ones."""
    got = snapshot(corpus()[name], tokenized[name])
    path = SNAPSHOTS / f"{name}.snap"
    if os.environ.get("ADMISS_UPDATE_SNAPSHOTS"):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == got


def test_names_get_the_scope_of_what_they_name(tokenized):
    """Kinds, property definitions and property references, as admiss's own symbol index
    (admiss/lsp/symbols.py) finds them, are scoped as such."""
    from admiss.api import compile_problems
    from admiss.lsp import symbols

    wanted = {symbols.KIND: ("support.constant.kind", "entity.name.type.kind"),
              symbols.GATE: ("entity.name.function.gate",), symbols.POLICY: ("constant.language.policy",)}
    checked = 0
    for name, text in corpus().items():
        source = Source(name, text)
        try:
            tree = parse_with_comments(source)[0]
        except RubricSyntaxError:
            continue
        rubric = compile_problems(tree, source)[0]
        for found in symbols.occurrences(rubric, tree):
            line = text.split("\n")[found.span.line - 1]
            scope = scope_at(tokenized[name], found.span.line - 1, utf16(text, found.span.line, found.span.column))
            if found.what == symbols.PROPERTY:
                expected = ("entity.name.type.property",) if found.defines else ("variable.other.property",)
                if not found.defines and "GATE admissibility" not in line and "FOR" not in line:
                    continue  # a property list continued on a later line is plain names
            else:
                expected = wanted.get(found.what)
                if expected is None or found.what == symbols.POLICY and found.name not in ("fail_open", "fail_closed"):
                    continue  # a misspelt policy (E111's example) is a plain name
            assert scope.startswith(expected), (name, found, scope)
            checked += 1
    assert checked > 300


# What docs/language.md's "Lexical rules" name, each as a regex over the raw text.
LEXICAL = {
    **{f"escape {e}": re.escape(e) for e in ('\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t")},
    "escape \\uXXXX": r"\\u[0-9a-fA-F]{4}", "surrogate pair": r"\\u[dD][89abAB]\w\w\\u[dD][c-fC-F]\w\w",
    "negative number": r"== -\d", "decimal number": r"\b\d+\.\d+\b(?![ms])",
    **{f"duration {u}": rf"\b\d+(\.\d+)?{u}\b" for u in ("ms", "s", "m")},
    "WHERE true": r"== true\b", "WHERE false": r"== false\b", "WHERE null": r"== null\b",
    "name starting with a keyword": r"\bADMITT\b", "lower-case keyword as a name": r"\bproperty\b",
    "comment after code": r"\S[ \t]+#", "# inside a string": r'"[^"\n]*#[^"\n]*"',
}


def test_every_keyword_and_lexical_form_of_the_language_page_has_a_snapshot():
    """Each keyword of the grammar, and each form the page's lexical rules show, occurs in a
    text that has a snapshot, so the snapshots show how it is highlighted."""
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    snapped = [text for name, text in corpus().items() if (SNAPSHOTS / f"{name}.snap").is_file()]
    lexed = {t.type.lstrip("_") for text in snapped if (found := expected_after(text)) for t in found[0]}
    missing = sorted(k for k in KEYWORDS if k not in lexed)  # the grammar's (tests/lsp/test_lsp_fuzz.py)
    assert not missing, f"keywords with no snapshot: {missing}"
    for what, pattern in LEXICAL.items():
        assert any(re.search(pattern, text) for text in snapped), f"{what}: shown on the page, in no snapshot"
    for unit in re.findall(r"`\d+(?:\.\d+)?(ms|s|m)`", page):
        assert f"duration {unit}" in LEXICAL
