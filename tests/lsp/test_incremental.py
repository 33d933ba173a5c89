"""The incremental parse gives what a full parse gives, whatever the edit."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from admiss import ir
from admiss.api import compile_problems
from admiss.lint import lint_source
from admiss.lsp.document import Document
from admiss.lint.config import LintConfig
from admiss.lsp.incremental import parse_text, reparse
from admiss.source import Source
from corpus import boundaries, texts

CORPUS = [t for t in texts() if boundaries(t)]


def outcome(parsed, text):
    """What a parse says, positions included: the IR with its spans, the comments, the error."""
    if parsed.tree is None:
        return [d.to_dict() for d in parsed.error.diagnostics], parsed.error.source.text
    rubric, problems = compile_problems(parsed.tree, Source("t.rubric", text))
    items = [(item.data, item.meta.start_pos, item.meta.end_pos) for item in parsed.tree.children]
    return ir.to_json(rubric), [d.to_dict() for d in problems], parsed.comments, parsed.text, items


@st.composite
def edits(draw):
    base = draw(st.sampled_from(CORPUS))
    cuts = boundaries(base)
    start = draw(st.sampled_from(cuts))
    end = draw(st.sampled_from([c for c in cuts if c >= start]))
    donor = draw(st.sampled_from(CORPUS))
    piece_cuts = boundaries(donor)
    a = draw(st.sampled_from(piece_cuts))
    b = draw(st.sampled_from([c for c in piece_cuts if c >= a][:40]))
    noise = draw(st.sampled_from(["", "\n", " ", "#", '"', ",", "}", "{", "\n\n  ", "x"]))
    return base, base[:start] + noise + donor[a:b] + base[end:]


@settings(max_examples=300, deadline=None)
@given(edits())
def test_reparse_after_any_edit_equals_a_full_parse(edit):
    base, text = edit
    expected = outcome(parse_text(text, "t.rubric"), text)
    assert outcome(reparse(parse_text(base, "t.rubric"), text, "t.rubric"), text) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(edits(), min_size=2, max_size=4))
def test_a_run_of_edits_on_the_last_good_parse_equals_full_parses(runs):
    """As the server does: each edit is parsed on the last text that parsed."""
    base = parse_text(runs[0][0], "t.rubric")
    for _, text in runs:
        got = reparse(base, text, "t.rubric")
        assert outcome(got, text) == outcome(parse_text(text, "t.rubric"), text)
        if got.tree is not None:
            base = got


@settings(max_examples=100, deadline=None)
@given(st.lists(edits(), min_size=2, max_size=5))
def test_a_document_edited_again_and_again_lints_as_a_fresh_lint(runs):
    """The server's own path: the incremental parse and lowering's memo of the kept items."""
    document = Document("t.rubric", None, LintConfig())
    for base, text in runs:
        for version in (base, text):
            assert list(document.update(version).diagnostics) == lint_source(version, "t.rubric")
