"""The code table, the rule modules, their docstrings, fixtures and docs pages agree."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import pytest

import admiss.lint.rules
from admiss.lint import lint_source
from admiss.lint.codes import ALL_RULES, BY_CODE, RULES
from admiss.lint.docs import HEADINGS, pages

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DOCS = ROOT / "docs" / "lint"
_RUBRIC_BLOCK = re.compile(r"```rubric\n(.*?)```", re.S)


def test_every_rule_module_is_in_the_table_once():
    modules = {m.name for m in pkgutil.iter_modules(admiss.lint.rules.__path__)}
    tabled = [rule.name for rule in ALL_RULES]
    assert sorted(tabled) == sorted(modules)
    assert len(BY_CODE) == len(ALL_RULES)


def test_codes_are_well_formed_and_in_order():
    codes = [rule.code for rule in ALL_RULES]
    assert all(re.fullmatch(r"ADM\d{3}", c) for c in codes)
    assert codes == sorted(codes)
    assert {rule.severity for rule in ALL_RULES} <= {"error", "warning"}


def test_issue_table_codes_and_severities():
    # The stable codes ADM001-ADM014 as the issue that introduced them fixed them.
    errors = {"ADM001", "ADM002", "ADM003", "ADM008"}
    for number in range(1, 15):
        code = f"ADM{number:03d}"
        assert BY_CODE[code].severity == ("error" if code in errors else "warning")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_has_docstring_with_every_heading(rule):
    doc = rule.module.__doc__ or ""
    assert rule.summary and not rule.summary.startswith("#")
    positions = [doc.find(h + "\n") for h in HEADINGS]
    assert all(p > 0 for p in positions), f"{rule.name}: missing one of {HEADINGS}"
    assert positions == sorted(positions)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_has_a_fixture(rule):
    assert (FIXTURES / f"{rule.code}_{rule.name}.rubric").is_file()


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_docstring_example_fires_and_fix_does_not(rule):
    doc = rule.module.__doc__
    example = doc.split("## Example", 1)[1].split("## How to fix it", 1)[0]
    fix = doc.split("## How to fix it", 1)[1]
    bad, good = _RUBRIC_BLOCK.findall(example), _RUBRIC_BLOCK.findall(fix)
    assert len(bad) == 1 and len(good) == 1
    assert rule.code in {d.code for d in lint_source(bad[0], "example.rubric")}
    fixed = lint_source(good[0], "fixed.rubric")
    assert rule.code not in {d.code for d in fixed}
    # The fix must compile: a fix that trades a warning for an error is no fix.
    assert not [d for d in fixed if d.code.startswith("E")]


def test_docs_pages_are_generated_and_current():
    generated = pages()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")}
    stale = sorted(name for name in generated.keys() | on_disk.keys() if generated.get(name) != on_disk.get(name))
    assert not stale, f"docs/lint is stale ({', '.join(stale)}): run python -m admiss.lint.docs"
    assert set(generated) == {f"{rule.code}.md" for rule in ALL_RULES} | {"index.md"}


def test_ir_rules_and_suppression_rule_are_split():
    assert ALL_RULES[-1].code == "ADM100" and ALL_RULES[-1] not in RULES


def test_the_index_names_the_compile_errors_language_md_lists():
    # lint reports every compile error; the ranges its index names must be those codes, no
    # more (E140, a provider missing from admiss.toml, is check's, not a compile error).
    said = re.search(r"Every compile error \(([^)]*), see", (DOCS / "index.md").read_text(encoding="utf-8")).group(1)
    named = set()
    for first, last in re.findall(r"E(\d{3})(?:-E(\d{3}))?", said):
        named |= {f"E{n}" for n in range(int(first), int(last or first) + 1)}
    language = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    table = language[language.index("## Compile errors"):]
    listed = set(re.findall(r"^\| (E\d{3}) \|", table, re.M))
    assert len(listed) > 30 and named == listed, sorted(named ^ listed)
