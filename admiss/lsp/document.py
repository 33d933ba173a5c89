"""One open rubric: its text, the parse kept between edits, and what the linter says of it."""

from __future__ import annotations

from pathlib import Path

import attrs

from admiss import ir
from admiss.errors import Diagnostic
from admiss.lint.config import LintConfig
from admiss.lint.engine import lint_tree
from admiss.lsp.incremental import Parsed, common_prefix, reparse
from admiss.lsp.symbols import Occurrence, occurrences
from admiss.source import Source


@attrs.frozen
class Analysis:
    """What one version of the text compiles to: every compile error and lint finding, and the
    IR and names when it parses (``rubric`` None on a syntax error)."""

    source: Source
    diagnostics: tuple[Diagnostic, ...]
    rubric: ir.Rubric | None = None
    found: tuple[Occurrence, ...] = ()


class Document:
    """An open document. ``update`` analyses a new text, reusing the last parse that succeeded."""

    def __init__(self, name: str, folder: Path | None, config: LintConfig):
        self.name, self.folder, self.config = name, folder, config
        self.base: Parsed | None = None  # the last text that parsed
        self.last_rubric: ir.Rubric | None = None  # its IR, for completing names in a broken text
        self.analysis = Analysis(Source(name, ""), ())

    def update(self, text: str) -> Analysis:
        parsed = reparse(self.base, text, self.name)
        source = Source(self.name, text)
        if parsed.tree is None:
            assert parsed.error is not None
            self.analysis = Analysis(source, parsed.error.diagnostics)
            return self.analysis
        self.base = parsed
        rubric, diagnostics = lint_tree(parsed.tree, parsed.comments, source, self.config, self.folder)
        self.last_rubric = rubric
        self.analysis = Analysis(source, tuple(diagnostics), rubric, tuple(occurrences(rubric, parsed.tree)))
        return self.analysis

    def completion_start(self, offset: int) -> int:
        """An offset before ``offset`` between two top-level items of the current text, from
        which completion may parse (the start of the last item that ends before both the
        cursor and the first change since the last good parse), else 0."""
        if self.base is None or self.base.tree is None:
            return 0
        limit = min(offset, common_prefix(self.base.text, self.analysis.source.text))
        ends = [item.meta.start_pos for item in self.base.tree.children if item.meta.end_pos < limit]
        return ends[-1] if ends else 0
