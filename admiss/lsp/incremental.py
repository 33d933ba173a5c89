"""Parsing again only what an edit touched, so diagnostics keep up with typing in a long rubric.

A rubric is a row of top-level items (RUBRIC, KINDS, PROPERTY, CHAIN, MAP), and the LALR
parser is in the same state before each of them. So after an edit the items wholly before
the changed text and the items starting on a line after it are kept, and only the text
between them is parsed again, after as many newlines and blanks as put its tokens on their
true lines and columns. The kept items after the edit move down by the lines the edit added.
Character offsets are kept true for the top-level items alone (they are what finds the
items around the next edit); tokens' offsets inside an item are not used after parsing
(lowering and the linter read lines and columns), so they are left as they came. A syntax error inside that text is where a full parse would find
it (the text before parsed, and the parser's state at its start is the same); one that runs
into the end of that text (an unclosed block) is not, so then the rest of the file is parsed.

Why: lark parses a 5,000-line rubric in about 0.2 s on a quiet core of this machine, most of
the 300 ms that diagnostics may take after a keystroke (benchmarks/bench_lsp.py measures
the whole round trip, full against incremental).
"""

from __future__ import annotations

import attrs

from admiss.errors import RubricSyntaxError
from admiss.parser import Token, Tree, parse_with_comments
from admiss.source import Comment, Source, Span


@attrs.frozen
class Parsed:
    """The parse of ``text``: its tree and comments, or the syntax error that stopped it."""

    text: str
    tree: Tree | None
    comments: tuple[Comment, ...] = ()
    error: RubricSyntaxError | None = None
    offset: int = 0


def parse_text(text: str, name: str) -> Parsed:
    """A full parse of ``text``."""
    try:
        tree, comments = parse_with_comments(Source(name, text))
    except RubricSyntaxError as error:
        return Parsed(text, None, error=error)
    return Parsed(text, tree, comments)


def reparse(base: Parsed | None, text: str, name: str) -> Parsed:
    """The parse of ``text``, reusing what it shares with ``base`` (the last parse that succeeded).

    ``base``'s trees may be moved into the result, so it must not be used after a success.
    """
    if base is None or base.tree is None or not base.tree.children:
        return parse_text(text, name)
    items = base.tree.children
    start = common_prefix(base.text, text)
    tail = _common_suffix(base.text, text, start)
    # The item just before the edit is parsed again too: `KINDS a` may go on as `KINDS a, b`.
    ended = sum(1 for item in items if item.meta.end_pos < start)
    kept_before = max(0, ended - 1)
    first = items[kept_before].meta
    region_start, region_at = (first.start_pos, (first.line, first.column)) if ended else (0, (1, 1))
    last_changed_line = base.text.count("\n", 0, len(base.text) - tail)
    after = [item for item in items[kept_before:] if item.meta.line - 1 > last_changed_line]
    shift = len(text) - len(base.text)
    region_end = after[0].meta.start_pos + shift if after else len(text)
    region = _padded_parse(text, region_start, region_end, name)
    if region.tree is None and after and _ran_out(region.error, text, region_end):
        after, region = [], _padded_parse(text, region_start, len(text), name)
    if region.tree is None:
        return Parsed(text, None, error=_named(region.error, text, name))
    before = items[:kept_before]
    lines = text.count("\n") - base.text.count("\n")
    for item in after:
        _move(item, lines, shift)
    for item in region.tree.children:
        item.meta.start_pos += region.offset
        item.meta.end_pos += region.offset
    tree = _spanning(before + region.tree.children + after)
    comments = _comments_around(base.comments, region.comments, region_at, after, lines)
    return Parsed(text, tree, comments)


def common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (halving, so each compare runs in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, prefix: int) -> int:
    """How many trailing characters ``a`` and ``b`` share, not reaching into the shared prefix."""
    low, high = 0, min(len(a), len(b)) - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _padded_parse(text: str, start: int, end: int, name: str) -> Parsed:
    """The parse of ``text[start:end]`` on its own lines and columns; ``offset`` is what its
    tokens' offsets lack (the padding is shorter than the text it stands for)."""
    line_start = text.rfind("\n", 0, start) + 1
    pad = "\n" * text.count("\n", 0, start) + " " * (start - line_start)
    parsed = parse_text(pad + text[start:end], name)
    return attrs.evolve(parsed, offset=start - len(pad))


def _ran_out(error: RubricSyntaxError | None, text: str, end: int) -> bool:
    """True when the parse of ``text[:end]`` stopped at the end of its input (parser.py puts
    that error just past the last line's last character, where no token starts)."""
    if error is None or not error.diagnostics:
        return False
    lines = text[:end].splitlines() or [""]
    span = error.diagnostics[0].span
    return (span.line, span.column) == (len(lines), len(lines[-1]) + 1)


def _named(error: RubricSyntaxError | None, text: str, name: str) -> RubricSyntaxError:
    """The error of a padded parse, quoting the real text (its snippets show the real lines)."""
    assert error is not None
    return RubricSyntaxError(error.diagnostics, Source(name, text))


def _spanning(items: list[Tree]) -> Tree:
    """The start tree of ``items``, its position theirs (as the parser gives it)."""
    tree = Tree("start", items)
    if items:
        first, last, meta = items[0].meta, items[-1].meta, tree.meta
        meta.line, meta.column, meta.start_pos = first.line, first.column, first.start_pos
        meta.end_line, meta.end_column, meta.end_pos = last.end_line, last.end_column, last.end_pos
        meta.empty = False
    return tree


def _move(item: Tree, lines: int, offset: int) -> None:
    """Move a top-level item down ``lines`` lines (every node of it) and on ``offset`` characters
    (the item's own offsets only)."""
    item.meta.start_pos += offset
    item.meta.end_pos += offset
    if not lines:
        return
    stack: list[Tree | Token] = [item]
    while stack:
        node = stack.pop()
        where = node if isinstance(node, Token) else node.meta
        where.line += lines
        where.end_line += lines
        if isinstance(node, Tree):
            stack.extend(node.children)


def _comments_around(old: tuple[Comment, ...], region: tuple[Comment, ...], region_at: tuple[int, int],
                     after: list[Tree], lines: int) -> tuple[Comment, ...]:
    """The kept comments of the old parse (before ``region_at``, and from the first kept item
    after the edit on, moved down ``lines``) around those of the re-parsed text."""
    ahead = tuple(c for c in old if (c.span.line, c.span.column) < region_at)
    if not after:
        return ahead + region
    first = (after[0].meta.line - lines, after[0].meta.column)
    behind = tuple(attrs.evolve(c, span=Span(c.span.line + lines, c.span.column, c.span.end_line + lines,
                                             c.span.end_column))
                   for c in old if (c.span.line, c.span.column) >= first)
    return ahead + region + behind
