"""Text to parse tree. The only module that imports lark; lark's errors stop here."""

from __future__ import annotations

import contextvars
import functools
from importlib import resources

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from admiss.errors import Diagnostic, RubricSyntaxError
from admiss.source import Comment, Source, Span

Tree = lark.Tree
Token = lark.Token

# How an expected terminal reads in a message.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "DURATION": "a duration such as 5s or 500ms",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "PATH": "a path starting at args. or result. (args.form, result.status)",
    "EQ": "'=='",
    "COMMA": "','",
    "$END": "end of file",
}


def grammar_text() -> str:
    return (resources.files("admiss.grammar") / "rubric.lark").read_text(encoding="utf-8")


# The comments of the parse in progress. The grammar ignores COMMENT, so the lexer hands
# each one to a callback; a context variable keeps concurrent parses apart.
_comments: contextvars.ContextVar[list[Comment]] = contextvars.ContextVar("admiss_comments")


def _keep_comment(token: Token) -> Token:
    _comments.get().append(Comment(str(token), _span_of_token(token)))
    return token


def _span_of_token(token: Token) -> Span:
    return Span(token.line, token.column, token.end_line, token.end_column)


@functools.lru_cache(maxsize=2)
def _lark(keep_comments: bool = False) -> lark.Lark:
    # cache=True keeps the LALR tables on disk keyed by the grammar's hash, so a CLI
    # run does not rebuild them. The plain parser has no callback, so compiling pays
    # nothing for the comments only the linter and the formatter read.
    return lark.Lark(
        grammar_text(),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=True,
        lexer_callbacks={"COMMENT": _keep_comment} if keep_comments else {},
    )


def parse(source: Source) -> Tree:
    """The parse tree of ``source``, or RubricSyntaxError with a located message."""
    try:
        return _lark().parse(source.text)
    except UnexpectedInput as exc:
        raise RubricSyntaxError([syntax_diagnostic(exc, source)], source) from None


def parse_with_comments(source: Source) -> tuple[Tree, tuple[Comment, ...]]:
    """The parse tree of ``source`` and its comments in source order (see :func:`parse`)."""
    found: list[Comment] = []
    reset = _comments.set(found)
    try:
        return _lark(keep_comments=True).parse(source.text), tuple(found)
    except UnexpectedInput as exc:
        raise RubricSyntaxError([syntax_diagnostic(exc, source)], source) from None
    finally:
        _comments.reset(reset)


def _word(terminal: str) -> str:
    # Keyword terminals are named _KEYWORD so the tree drops them; a message says KEYWORD.
    terminal = terminal.lstrip("_") if terminal[1:].isupper() else terminal
    if terminal in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[terminal]
    return terminal if terminal.isupper() and terminal.isalpha() else terminal.lower()


def _expected(exc: UnexpectedInput) -> list[str]:
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None) or ()
    return sorted({_word(n) for n in names if not n.startswith("__")})


def _hint(expected: list[str]) -> str | None:
    if not expected:
        return None
    if len(expected) > 8:
        return "expected one of: " + ", ".join(expected[:8]) + ", ..."
    return "expected " + (expected[0] if len(expected) == 1 else "one of: " + ", ".join(expected))


def _found(exc: UnexpectedInput, source: Source) -> tuple[str, Span]:
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            return "unexpected end of file", _end_span(source)
        width = max(1, len(str(token)))
        return f"unexpected {_describe_token(token)}", Span.point(token.line, token.column, width)
    if isinstance(exc, UnexpectedCharacters):
        char = source.text[exc.pos_in_stream] if exc.pos_in_stream < len(source.text) else ""
        if char == '"':
            return "unterminated or malformed string", Span.point(exc.line, exc.column)
        return f"unexpected character {char!r}", Span.point(exc.line, exc.column)
    return "unexpected end of file", _end_span(source)


def _describe_token(token: Token) -> str:
    if token.type == "STRING":
        return f"string {token}"
    if token.type in ("NAME", "NUMBER", "DURATION"):
        return f"{token.type.lower()} {str(token)!r}"
    return f"{str(token)!r}"


def _end_span(source: Source) -> Span:
    lines = source.text.splitlines() or [""]
    return Span.point(len(lines), len(lines[-1]) + 1)


def _special_hint(exc: UnexpectedInput, source: Source) -> str | None:
    """A hint for the mistakes people make most: lower-case keywords and bad escapes."""
    token = getattr(exc, "token", None)
    expected = set(getattr(exc, "expected", None) or ())
    if token is not None and token.type == "NAME" and str(token).upper() in expected:
        return f"keywords are upper case: write {str(token).upper()}"
    if isinstance(exc, UnexpectedCharacters) and source.text[exc.pos_in_stream:exc.pos_in_stream + 1] == '"':
        return 'strings end on the same line and use JSON escapes: \\" \\\\ \\n \\uXXXX'
    if isinstance(exc, UnexpectedCharacters) and "_EQ" in exc.allowed:
        return _comparison_hint(source.text[exc.pos_in_stream:exc.pos_in_stream + 2])
    at = getattr(exc, "pos_in_stream", 0)
    if isinstance(exc, UnexpectedCharacters) and source.text[max(at - 2, 0):at + 1] == "===":
        return "compare with == (two equals signs, not three)"
    return None


def _comparison_hint(found: str) -> str:
    """WHERE compares with == alone: what to write instead of = or !=."""
    if found == "!=":
        return ("WHERE has only ==: for \"not equal\", put a rule WHERE path == value ... SKIP (or AS another "
                "kind) before this one; the first rule that matches a step decides it")
    if found.startswith("="):
        return "compare with == (two equals signs)"
    return "expected '=='"


def syntax_diagnostic(exc: UnexpectedInput, source: Source) -> Diagnostic:
    message, span = _found(exc, source)
    hint = _special_hint(exc, source) or _hint(_expected(exc))
    return Diagnostic("E100", f"syntax error: {message}", span, hint=hint, file=source.name)


def expected_after(text: str) -> tuple[list[Token], frozenset[str]] | None:
    """The tokens of ``text`` and the terminals the grammar accepts next, by the parser's own
    tables (for completion); None when ``text`` is not the start of a rubric."""
    try:
        interactive = _lark().parse_interactive(text)
        tokens = list(interactive.iter_parse())
        return tokens, frozenset(interactive.accepts())
    except UnexpectedInput:
        return None
