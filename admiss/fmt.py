"""``admiss fmt``: rubric source in the canonical layout (docs/fmt.md).

The formatter is the parse tree's second reader after lower.py: it prints every token as
written (strings keep their escapes, numbers their digits), so formatting never changes the
IR, and lays the tokens out afresh. Comments come from the parser with their positions and
are put back between the same tokens: one that ended a line still ends the line after the
same token, one that stood on its own line still stands alone before the same token.

Layout works on *atoms*, pieces of text never split across lines: a statement's head
(``ADMIT first_kind,``), each further list item, each gate option, braces. Each atom says
how it may start a line: always (a statement, a closing brace), only when a comment forces
it (an opening brace), or when it does not fit within WIDTH (list items, gate options).
"""

from __future__ import annotations

import difflib
from typing import Iterator

import attrs

from admiss.errors import AdmissError, Diagnostic
from admiss.ir import MAP_STEPS
from admiss.parser import Token, Tree, parse_with_comments
from admiss.source import Comment, Source

WIDTH = 100
INDENT = 2

LINE, GLUE, WRAP = "line", "glue", "wrap"


@attrs.frozen
class _Atom:
    text: str
    line: int
    column: int
    end_line: int
    # Where a line starting with this atom is indented, and how it may start one.
    indent: int
    breaks: str
    # Indent of a comment standing alone just before this atom.
    comment_indent: int
    # Nesting depth of the statement the atom belongs to (0 = top level), and whether it
    # opens a statement or closes a block: these decide blank lines.
    depth: int
    opens: bool = False
    closes: bool = False


class _Builder:
    """The atoms of a parse tree, in source order."""

    def __init__(self, source: Source):
        self.text = source.text
        self.atoms: list[_Atom] = []

    def add(self, text: str, start: tuple[int, int], end_line: int, indent: int, breaks: str, depth: int,
            comment_indent: int | None = None, opens: bool = False, closes: bool = False) -> None:
        self.atoms.append(_Atom(text, start[0], start[1], end_line, indent, breaks,
                                indent if comment_indent is None else comment_indent, depth, opens, closes))

    # ------------------------------------------------------------ statements

    def statements(self, trees: list[Tree], depth: int) -> None:
        for tree in trees:
            getattr(self, tree.data)(tree, depth)

    def header(self, tree: Tree, depth: int) -> None:
        self.head("RUBRIC " + _words(tree.children), tree, depth)

    def kinds(self, tree: Tree, depth: int) -> None:
        self.listing("KINDS", tree, tree.children[0].children, depth)

    def admit(self, tree: Tree, depth: int) -> None:
        self.listing("ADMIT", tree, tree.children[1].children, depth)

    def forbid(self, tree: Tree, depth: int) -> None:
        self.listing("FORBID", tree, tree.children[0].children, depth)

    def reject(self, tree: Tree, depth: int) -> None:
        self.listing("REJECT SHORTCUT", tree, tree.children[0].children, depth)

    def default(self, tree: Tree, depth: int) -> None:
        self.head("DEFAULT " + _words(tree.children), tree, depth)

    def property(self, tree: Tree, depth: int) -> None:
        heading = [c for c in tree.children if isinstance(c, Token)]
        self.head(_words(heading), tree, depth, end=heading[-1])
        self.block(tree, heading[-1], [c for c in tree.children if isinstance(c, Tree)], depth)

    def chain(self, tree: Tree, depth: int) -> None:
        name, *members = tree.children
        self.head(f"CHAIN {name}", tree, depth, end=name)
        self.block(tree, name, members, depth)

    def rung(self, tree: Tree, depth: int) -> None:
        name, *rest = tree.children
        model = rest.pop(0).children[0] if rest and rest[0].data == "rung_model" else None
        self.head(f"RUNG {name}" + (f" MODEL {model}" if model is not None else ""), tree, depth,
                  end=model if model is not None else name)
        self.block(tree, model if model is not None else name, rest, depth)

    def gate(self, tree: Tree, depth: int) -> None:
        kind, *options = tree.children
        indent = depth * INDENT
        names = options.pop(0).children[0].children if options and options[0].data == "gate_properties" else []
        self.listing(f"GATE {kind}", tree, names, depth, end=kind)
        for option in options:
            self.add(_option_text(option), _start(option), option.meta.end_line, indent + INDENT, WRAP, depth)

    def mapping(self, tree: Tree, depth: int) -> None:
        keyword, *rules = tree.children
        self.head("MAP", tree, depth, end=keyword)
        self.block(tree, keyword, rules, depth)

    def map_rule(self, tree: Tree, depth: int) -> None:
        """``WHEN selector`` heads the line; each condition, the action and its options wrap."""
        selector, *parts = tree.children
        head = _MAP_SELECTORS[selector.data] + "".join(f" {t}" for t in selector.children)
        self.head("WHEN " + head, tree, depth, end=selector)
        indent = depth * INDENT + INDENT
        for part in parts:
            pieces = [part] if part.data != "map_as" else [part, *part.children[1:]]
            for piece in pieces:
                # AS ends at its kind: its options are atoms of their own.
                end_line = piece.children[0].end_line if piece.data == "map_as" else piece.meta.end_line
                self.add(_map_text(piece), _start(piece), end_line, indent, WRAP, depth)

    # ------------------------------------------------------------ pieces

    def head(self, text: str, tree: Tree, depth: int, end: Token | Tree | None = None) -> None:
        end_line = (end.end_line if isinstance(end, Token) else end.meta.end_line) if end is not None \
            else tree.meta.end_line
        self.add(text, _start(tree), end_line, depth * INDENT, LINE, depth, opens=True)

    def listing(self, keyword: str, tree: Tree, items: list[Token], depth: int, end: Token | None = None) -> None:
        """``keyword first, second, ...``: further items wrap aligned under the first."""
        indent = depth * INDENT
        if not items:
            self.head(keyword, tree, depth, end=end)
            return
        last = len(items) - 1
        texts = [str(item) + ("," if i < last else "") for i, item in enumerate(items)]
        self.add(f"{keyword} {texts[0]}", _start(tree), items[0].end_line, indent, LINE, depth, opens=True)
        align = indent + len(keyword) + 1
        for item, text in zip(items[1:], texts[1:]):
            self.add(text, (item.line, item.column), item.end_line, align, WRAP, depth)

    def block(self, tree: Tree, last_heading: Token, body: list[Tree], depth: int) -> None:
        indent, inner = depth * INDENT, (depth + 1) * INDENT
        brace = self.brace_after(last_heading)
        self.add("{", brace, brace[0], indent, GLUE, depth, inner)
        self.statements(body, depth + 1)
        close = (tree.meta.end_line, tree.meta.end_column - 1)
        self.add("}", close, close[0], indent, LINE, depth, inner, closes=True)

    def brace_after(self, token: Token) -> tuple[int, int]:
        """Where the ``{`` after ``token`` stands; only blanks and comments come between."""
        position = token.end_pos
        while self.text[position] != "{":
            position = self.text.index("\n", position) if self.text[position] == "#" else position + 1
        line = self.text.count("\n", 0, position) + 1
        return line, position - self.text.rfind("\n", 0, position)


def _start(node: Tree) -> tuple[int, int]:
    return node.meta.line, node.meta.column


def _words(tokens: list[Token]) -> str:
    return " ".join(str(t) for t in tokens)


_OPTION_KEYWORDS = {"on_abstain": "ON ABSTAIN", "file": "FILE", "timeout": "TIMEOUT", "model": "MODEL",
                    "threshold": "THRESHOLD", "judge_rubric": "RUBRIC", "k": "K", "meaning": "MEANING MODEL"}


def _option_text(option: Tree) -> str:
    if option.data == "cmd":
        strings = option.children[0].children if option.children else []
        return "CMD [" + ", ".join(str(s) for s in strings) + "]"
    if option.data == "gate_tools":
        return "TOOL " + ", ".join(str(s) for s in option.children[0].children)
    if option.data == "budget":
        rate, window = option.children
        return f"BUDGET {rate} WINDOW {window}"
    return f"{_OPTION_KEYWORDS[option.data]} {option.children[0]}"


_MAP_SELECTORS = {f"step_{keyword.lower()}": keyword for keyword in MAP_STEPS}
_MAP_KEYWORDS = {"map_outcome": "OUTCOME", "map_where": "WHERE", "map_skip": "SKIP", "map_label": "LABEL",
                 "map_detail": "DETAIL", "map_for": "FOR"}


def _map_text(piece: Tree) -> str:
    """One atom of a WHEN rule. AS stands with its kind only; its options are atoms of their own."""
    if piece.data == "map_as":
        return f"AS {piece.children[0]}"
    if piece.data == "map_outcome":
        return "OUTCOME " + ", ".join(str(name) for name in piece.children[0].children)
    if piece.data == "map_where":
        path, value = piece.children
        return f"WHERE {path} == {value}"
    if piece.data == "map_match":
        path, pattern = piece.children
        return f"WHERE {path} MATCHES {pattern}"
    return " ".join([_MAP_KEYWORDS[piece.data], *(str(t) for t in piece.children)])


# ---------------------------------------------------------------- printing


def _stream(atoms: list[_Atom], comments: tuple[Comment, ...]) -> list[_Atom | Comment]:
    """Atoms and comments in source order; a comment inside an atom comes after it."""
    def position(item: _Atom | Comment) -> tuple[int, int]:
        return (item.span.line, item.span.column) if isinstance(item, Comment) else (item.line, item.column)
    return sorted([*atoms, *comments], key=position)


def _next_atoms(stream: list[_Atom | Comment]) -> list[_Atom | None]:
    """For each position in the stream, the first atom at or after it."""
    found: list[_Atom | None] = [None] * len(stream)
    following = None
    for index in range(len(stream) - 1, -1, -1):
        if isinstance(stream[index], _Atom):
            following = stream[index]
        found[index] = following
    return found


class _Printer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.current: str | None = None
        # The last atom printed, or the last comment that stood on its own line.
        self.last: _Atom | Comment | None = None

    def flush(self) -> None:
        if self.current is not None:
            self.lines.append(self.current.rstrip())
            self.current = None

    def start_line(self, text: str, blank: bool) -> None:
        self.flush()
        if blank and self.lines and self.lines[-1]:
            self.lines.append("")
        self.current = text

    def wants_blank(self, next_atom: _Atom | None, written_blank: bool) -> bool:
        """Whether an entry (a statement, or a comment standing alone before ``next_atom``) follows a blank line."""
        at_top = next_atom is None or (next_atom.depth == 0 and next_atom.opens)
        in_body = next_atom is not None and (next_atom.opens or next_atom.closes)
        if not (at_top or in_body):
            return False  # inside a statement
        if isinstance(self.last, _Atom) and self.last.text == "{":
            return False  # first in a block
        if at_top and isinstance(self.last, _Atom) and self.last.depth == 0:
            return True  # a blank line after every top-level statement
        return written_blank

    def comment(self, comment: Comment, trailing: bool, next_atom: _Atom | None, written_blank: bool) -> None:
        text = comment.text.rstrip()
        # Two comments can end lines that the layout joins into one (`KINDS # a` then
        # `receipt # b`): the first ends the joined line, the second gets a line of its own.
        if trailing and self.current is not None:
            self.current += "  " + text
        else:
            indent = next_atom.comment_indent if next_atom is not None else 0
            blank = self.wants_blank(next_atom, written_blank)
            self.start_line(" " * indent + text, blank)
            self.last = comment
        # Nothing may follow a comment on its line.
        self.flush()

    def atom(self, atom: _Atom, written_blank: bool) -> None:
        fits = self.current is not None and len(self.current) + 1 + len(atom.text) <= WIDTH
        if self.current is None or atom.breaks == LINE or (atom.breaks == WRAP and not fits):
            blank = atom.breaks == LINE and not atom.closes and self.wants_blank(atom, written_blank)
            self.start_line(" " * atom.indent + atom.text, blank)
        else:
            self.current += " " + atom.text
        self.last = atom


def _layout(atoms: list[_Atom], comments: tuple[Comment, ...], source: Source) -> str:
    stream = _stream(atoms, comments)
    next_atoms = _next_atoms(stream)
    printer = _Printer()
    # The source line the previous item ended on, to see blank lines and end-of-line comments.
    last_line = None
    for item, next_atom in zip(stream, next_atoms):
        line = item.span.line if isinstance(item, Comment) else item.line
        written_blank = last_line is not None and line - last_line > 1
        if isinstance(item, Comment):
            # An end-of-line comment ends the line of the atom it follows (or stood inside).
            printer.comment(item, not item.stands_alone(source), next_atom, written_blank)
            last_line = line
        else:
            printer.atom(item, written_blank)
            last_line = item.end_line
    printer.flush()
    return "\n".join(printer.lines) + "\n" if printer.lines else ""


def format_source(text: str, name: str = "<string>") -> str:
    """``text`` in the canonical layout; RubricSyntaxError when it does not parse."""
    source = Source(name, text)
    tree, comments = parse_with_comments(source)
    builder = _Builder(source)
    builder.statements(tree.children, 0)
    formatted = _layout(builder.atoms, comments, source)
    _check_unchanged(tree, comments, formatted, name)
    return formatted


class FormatError(AdmissError):
    """The formatter would have changed the rubric's tokens or comments: a bug in admiss."""


def _check_unchanged(tree: Tree, comments: tuple[Comment, ...], formatted: str, name: str) -> None:
    # Like black's safety check: never hand back text that reads differently.
    again, again_comments = parse_with_comments(Source(name, formatted))
    if again != tree or [c.text.rstrip() for c in again_comments] != [c.text.rstrip() for c in comments]:
        raise FormatError([Diagnostic("E005", "formatting would change the rubric; the file is left as it was",
                                      hint="this is a bug in admiss fmt: please report it with the file",
                                      file=name)])


def unified_diff(before: str, after: str, name: str) -> str:
    """A unified diff from ``before`` to ``after``, both labelled with ``name``."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=name, tofile=name)
    return "".join(_ensure_newline(lines))


def _ensure_newline(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
