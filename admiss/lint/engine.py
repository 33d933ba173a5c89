"""Linting one rubric source: compile errors and rule findings, all at once."""

from __future__ import annotations

from pathlib import Path

from admiss import ir
from admiss.analyze import missing_gate_files
from admiss.api import compile_problems
from admiss.errors import Diagnostic, RubricSyntaxError
from admiss.lint.codes import ALL_RULES, RULES, UNUSED_SUPPRESSION, Rule
from admiss.lint.config import LintConfig
from admiss.lint.rules import Finding
from admiss.lint.suppression import Suppression, suppressions
from admiss.parser import Tree, parse_with_comments
from admiss.source import Comment, Source


def _diagnostic(rule: Rule, finding: Finding, file: str) -> Diagnostic:
    return Diagnostic(rule.code, finding.message, finding.span, rule.severity, finding.hint, file)


def _position(diagnostic: Diagnostic) -> tuple[int, int, str]:
    return diagnostic.span.line, diagnostic.span.column, diagnostic.code


def lint_source(text: str, name: str = "<string>", config: LintConfig = LintConfig(),
                folder: Path | None = None) -> list[Diagnostic]:
    """Every problem in rubric source ``text``, sorted by position.

    A syntax error is reported alone (nothing after it can be read). Other compile errors
    are reported with their own codes, and the rules still run on the IR lowering built.
    With ``folder`` (the rubric file's), gate files and programs are checked to exist there.
    """
    source = Source(name, text)
    try:
        tree, comments = parse_with_comments(source)
    except RubricSyntaxError as error:
        return list(error.diagnostics)
    return lint_tree(tree, comments, source, config, folder)[1]


def lint_tree(tree: Tree, comments: tuple[Comment, ...], source: Source, config: LintConfig = LintConfig(),
              folder: Path | None = None, memo: dict | None = None) -> tuple[ir.Rubric, list[Diagnostic]]:
    """The IR lowering built from a parsed source, and every problem in it (see :func:`lint_source`;
    ``memo`` is lowering's, see ``admiss.lower.lower``)."""
    name = source.name
    rubric, problems = compile_problems(tree, source, memo)
    if folder is not None:
        problems = problems + missing_gate_files(rubric, folder, name)
    found = [_diagnostic(rule, finding, name)
             for rule in RULES if config.enabled(rule.code) for finding in rule.module.check(rubric)]
    kept, unused = _apply_suppressions(found, suppressions(source, comments), config, name)
    return rubric, sorted(problems + kept + unused, key=_position)


def _apply_suppressions(found: list[Diagnostic], marks: list[Suppression], config: LintConfig,
                        name: str) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """The findings no suppression covers, and the findings about the suppressions."""
    covered = {(mark.line, code) for mark in marks for code in mark.codes}
    kept = [d for d in found if (d.span.line, d.code) not in covered]
    used = {(d.span.line, d.code) for d in found} & covered
    if not config.enabled(UNUSED_SUPPRESSION.code):
        return kept, []
    known = {rule.code for rule in ALL_RULES}
    unused = [_diagnostic(UNUSED_SUPPRESSION, finding, name)
              for finding in UNUSED_SUPPRESSION.module.check(marks, used, known, config.enabled)]
    return kept, unused
