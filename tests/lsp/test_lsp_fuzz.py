"""`admiss lsp` never fails on half-typed input: every real rubric cut at every token boundary,
and pieces of them spliced together, each answered for every feature by a server that lives on."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lsprotocol import types as lsp

from corpus import PIECES, boundaries, grammar_keywords, texts
from lspkit import Session, doc

CORPUS = [t for t in texts() if boundaries(t)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    session = Session(tmp_path_factory.mktemp("fuzz"))
    yield session
    session.close()


def end_of(text: str) -> lsp.Position:
    lines = text.split("\n")
    return lsp.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


def requests(uri: str, text: str, every: bool) -> list[tuple[str, object]]:
    here, whole = end_of(text), lsp.Range(lsp.Position(0, 0), end_of(text))
    asked = [(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionParams(text_document=doc(uri), position=here)),
             (lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(text_document=doc(uri), position=here))]
    if every:
        asked += [
            (lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(text_document=doc(uri), position=here)),
            (lsp.TEXT_DOCUMENT_REFERENCES, lsp.ReferenceParams(text_document=doc(uri), position=here,
                                                               context=lsp.ReferenceContext(True))),
            (lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionParams(text_document=doc(uri), range=whole,
                                                                 context=lsp.CodeActionContext(diagnostics=[]))),
            (lsp.TEXT_DOCUMENT_FORMATTING, lsp.DocumentFormattingParams(
                text_document=doc(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)))]
    return asked


def feed(server: Session, uri: str, pieces: list[str]) -> None:
    """Each piece as the document's next version, with requests after each; every one must be
    answered without an error, and each version's diagnostics published."""
    server.open(uri, "")
    first = server.versions[uri] + 1

    async def run() -> list:
        futures = []
        for number, text in enumerate(pieces):
            server.change(uri, text, wait=False)
            for method, params in requests(uri, text, every=number % 4 == 0):
                futures.append(server.client.protocol.send_request_async(method, params))
        return await asyncio.gather(*futures, return_exceptions=True)

    answers = server.run(run())
    failures = [a for a in answers if isinstance(a, BaseException)]
    assert not failures, failures[:3]
    for version in range(first, server.versions[uri] + 1):
        server.diagnostics(uri, version)
    assert server.alive


@pytest.mark.parametrize("number", range(len(CORPUS)))
def test_every_cut_of_a_real_rubric_is_answered(server, tmp_path, number):
    text = CORPUS[number]
    feed(server, (tmp_path / "cut.rubric").as_uri(), [text[:cut] for cut in boundaries(text)])


@st.composite
def splices(draw) -> list[str]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        a, b = draw(st.sampled_from(CORPUS)), draw(st.sampled_from(CORPUS))
        out.append(a[:draw(st.sampled_from(boundaries(a)))] + b[draw(st.sampled_from(boundaries(b))):])
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=splices())
def test_spliced_pieces_of_real_rubrics_are_answered(server, tmp_path, pieces):
    feed(server, (tmp_path / "splice.rubric").as_uri(), pieces)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.lists(st.sampled_from(grammar_keywords() + PIECES), max_size=60).map(" ".join),
                       min_size=1, max_size=4))
def test_runs_of_the_grammars_own_pieces_are_answered(server, tmp_path, pieces):
    feed(server, (tmp_path / "pieces.rubric").as_uri(), pieces)


def test_the_keywords_hover_knows_are_the_grammars():
    from admiss.lsp.words import KEYWORDS

    assert sorted(KEYWORDS) == sorted(grammar_keywords())
