"""The language server over stdio: pygls and lsprotocol are imported here and nowhere else.

Positions: admiss counts lines from 1 and columns from 1 in characters (code points), as the
parser does; LSP counts both from 0 and columns in the units the client and server agreed on
(UTF-16 unless it asked otherwise). Lines are split at ``\\n`` alone, as the parser splits them.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import PositionCodec

import admiss
from admiss.errors import AdmissError, Diagnostic
from admiss.fmt import format_source
from admiss.lint.codes import BY_CODE
from admiss.lint.config import LintConfig, find_config
from admiss.lsp import symbols, words
from admiss.lsp.complete import GATE, KEYWORD, KIND, PROPERTY, Names, completions
from admiss.lsp.document import Analysis, Document
from admiss.lsp.fixes import fixes
from admiss.lsp.hover import hover_text
from admiss.source import Span

_SEVERITIES = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}
_ITEM_KINDS = {KEYWORD: lsp.CompletionItemKind.Keyword, KIND: lsp.CompletionItemKind.EnumMember,
               PROPERTY: lsp.CompletionItemKind.Reference, GATE: lsp.CompletionItemKind.Function}


class _Positions:
    """Conversion between admiss spans and LSP ranges for one text."""

    def __init__(self, text: str, codec: PositionCodec):
        self.lines = text.split("\n")
        self.codec = codec

    def position(self, line: int, column: int) -> lsp.Position:
        if line <= 0:
            return lsp.Position(0, 0)
        row = min(line, len(self.lines)) - 1
        return lsp.Position(row, self.codec.client_num_units(self.lines[row][:max(0, column - 1)]))

    def range(self, span: Span) -> lsp.Range:
        return lsp.Range(self.position(span.line, span.column), self.position(span.end_line, span.end_column))

    def point(self, position: lsp.Position) -> tuple[int, int]:
        """The 1-based line and column (code points) of an LSP position."""
        row = min(position.line, len(self.lines) - 1)
        text, units, column = self.lines[row], 0, 0
        while column < len(text) and units < position.character:
            units += self.codec.client_num_units(text[column])
            column += 1
        return row + 1, column + 1

    def offset(self, position: lsp.Position) -> int:
        line, column = self.point(position)
        return sum(len(text) + 1 for text in self.lines[:line - 1]) + column - 1


def _docs_page(code: str) -> str | None:
    if code in BY_CODE:
        return BY_CODE[code].page
    return "language.md#compile-errors" if code.startswith("E1") else None


def _diagnostic(diagnostic: Diagnostic, positions: _Positions) -> lsp.Diagnostic:
    page = _docs_page(diagnostic.code)
    message = diagnostic.message + (f"\nhint: {diagnostic.hint}" if diagnostic.hint else "")
    return lsp.Diagnostic(
        range=positions.range(diagnostic.span), message=message, source="admiss", code=diagnostic.code,
        severity=_SEVERITIES.get(diagnostic.severity, lsp.DiagnosticSeverity.Error),
        code_description=lsp.CodeDescription(href=words.docs_link(page)) if page else None)


def _path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


class RubricServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("admiss", admiss.__version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.documents: dict[str, Document] = {}

    def document(self, uri: str) -> Document:
        if uri not in self.documents:
            path = _path(uri)
            folder = path.parent if path is not None else None
            try:
                config = find_config(folder) if folder is not None else LintConfig()
            except AdmissError as error:  # a broken [lint] table: say so, lint with every rule
                self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, error.render()))
                config = LintConfig()
            self.documents[uri] = Document(path.name if path else uri, folder, config)
        return self.documents[uri]

    def positions(self, text: str) -> _Positions:
        return _Positions(text, self.workspace.position_codec)

    def analyse(self, uri: str) -> None:
        text_document = self.workspace.get_text_document(uri)
        analysis = self.document(uri).update(text_document.source)
        positions = self.positions(analysis.source.text)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=text_document.version,
            diagnostics=[_diagnostic(d, positions) for d in analysis.diagnostics]))

    def current(self, uri: str) -> tuple[Analysis, _Positions]:
        analysis = self.document(uri).analysis
        return analysis, self.positions(analysis.source.text)


server = RubricServer()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def _opened(ls: RubricServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.analyse(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def _changed(ls: RubricServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.analyse(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def _saved(ls: RubricServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.analyse(params.text_document.uri)  # gate files beside the rubric may have come or gone


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def _closed(ls: RubricServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.documents.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def _hover(ls: RubricServer, params: lsp.HoverParams) -> lsp.Hover | None:
    analysis, positions = ls.current(params.text_document.uri)
    line, column = positions.point(params.position)
    document = ls.document(params.text_document.uri)
    text = hover_text(analysis.rubric, document.found(), analysis.source.line_text(line), line, column,
                      document.last_rubric)
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text)) if text else None


def _locations(ls: RubricServer, uri: str, position: lsp.Position, declarations: bool,
               uses: bool) -> list[lsp.Location]:
    """Where the symbol under ``position`` is defined (``declarations``) and used (``uses``)."""
    positions = ls.current(uri)[1]
    found = ls.document(uri).found()
    symbol = symbols.at(found, *positions.point(position))
    if symbol is None:
        return []
    return [lsp.Location(uri, positions.range(o.span)) for o in symbols.same_symbol(found, symbol)
            if (declarations if o.defines else uses)]


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def _definition(ls: RubricServer, params: lsp.DefinitionParams) -> list[lsp.Location]:
    return _locations(ls, params.text_document.uri, params.position, declarations=True, uses=False)


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
def _references(ls: RubricServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
    return _locations(ls, params.text_document.uri, params.position, params.context.include_declaration, uses=True)


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[" ", ","]))
def _complete(ls: RubricServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    uri = params.text_document.uri
    document = ls.document(uri)
    analysis, positions = ls.current(uri)
    offset = positions.offset(params.position)
    items = completions(analysis.source.text, offset, Names.of(analysis.rubric or document.last_rubric),
                        document.completion_start(offset))
    return lsp.CompletionList(is_incomplete=False, items=[
        lsp.CompletionItem(label=item.label, kind=_ITEM_KINDS.get(item.what, lsp.CompletionItemKind.Value),
                           detail=item.detail or None) for item in items])


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
def _format(ls: RubricServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
    analysis, positions = ls.current(params.text_document.uri)
    text = analysis.source.text
    try:
        formatted = format_source(text, analysis.source.name)
    except AdmissError:  # a text that does not parse is left as it is; its diagnostics say why
        return None
    if formatted == text:
        return []
    end = positions.position(len(positions.lines), len(positions.lines[-1]) + 1)
    return [lsp.TextEdit(lsp.Range(lsp.Position(0, 0), end), formatted)]


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
def _code_actions(ls: RubricServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    analysis, positions = ls.current(uri)
    if analysis.rubric is None:
        return []
    asked = params.range
    wanted = [d for d in analysis.diagnostics if _overlaps(positions.range(d.span), asked)]
    return [lsp.CodeAction(
        title=fix.title, kind=lsp.CodeActionKind.QuickFix, is_preferred=True,
        diagnostics=[_diagnostic(fix.diagnostic, positions)],
        edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(positions.range(e.span), e.text) for e in fix.edits]}))
        for fix in fixes(analysis.rubric, analysis.source, wanted)]


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return p.line, p.character
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def run() -> None:
    """Serve one client over standard input and output until it says exit."""
    server.start_io()
