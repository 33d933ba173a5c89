"""One open rubric: its text, the parse kept between edits, and what the linter says of it."""

from __future__ import annotations

from pathlib import Path

import attrs

from admiss import ir
from admiss.collector import collector_paused
from admiss.errors import Diagnostic
from admiss.lint.config import LintConfig
from admiss.lint.engine import lint_tree
from admiss.lsp.incremental import Parsed, common_prefix, reparse
from admiss.lsp.symbols import Occurrence, occurrences
from admiss.parser import Tree
from admiss.source import Source


@attrs.frozen
class Analysis:
    """What one version of the text compiles to: every compile error and lint finding, and the
    IR and parse tree when it parses (``rubric`` None on a syntax error)."""

    source: Source
    diagnostics: tuple[Diagnostic, ...]
    rubric: ir.Rubric | None = None
    tree: Tree | None = attrs.field(default=None, eq=False, repr=False)


class Document:
    """An open document. ``update`` analyses a new text, reusing the last parse that succeeded."""

    def __init__(self, name: str, folder: Path | None, config: LintConfig):
        self.name, self.folder, self.config = name, folder, config
        self.base: Parsed | None = None  # the last text that parsed
        self.last_rubric: ir.Rubric | None = None  # its IR, for completing names in a broken text
        self.lowered: dict = {}  # lowering's memo of the items kept between parses
        self.analysis = Analysis(Source(name, ""), ())
        self._found: list[Occurrence] | None = None

    def update(self, text: str) -> Analysis:
        self._found = None
        with collector_paused():  # as compiling does: the collector would walk every new node again and again
            parsed = reparse(self.base, text, self.name)
        source = Source(self.name, text)
        if parsed.tree is None:
            assert parsed.error is not None
            self.analysis = Analysis(source, parsed.error.diagnostics)
            return self.analysis
        self.base = parsed
        with collector_paused():
            rubric, diagnostics = lint_tree(parsed.tree, parsed.comments, source, self.config, self.folder,
                                            self.lowered)
        self.last_rubric = rubric
        self.analysis = Analysis(source, tuple(diagnostics), rubric, parsed.tree)
        return self.analysis

    def found(self) -> list[Occurrence]:
        """The names written in the current text (made when first asked for: most edits never
        are followed by a hover or a look-up)."""
        if self._found is None:
            analysis = self.analysis
            self._found = occurrences(analysis.rubric, analysis.tree) if analysis.rubric is not None else []
        return self._found

    def completion_start(self, offset: int) -> int:
        """An offset before ``offset`` between two top-level items of the current text, from
        which completion may parse (the start of the last item that ends before both the
        cursor and the first change since the last good parse), else 0."""
        if self.base is None or self.base.tree is None:
            return 0
        limit = min(offset, common_prefix(self.base.text, self.analysis.source.text))
        ends = [item.meta.start_pos for item in self.base.tree.children if item.meta.end_pos < limit]
        return ends[-1] if ends else 0
