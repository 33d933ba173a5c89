"""The one redaction step: URL user-info and configured key values never shown."""

from __future__ import annotations

import pytest

from admiss.errors import Diagnostic
from admiss.redact import clipped, key_values, redact, redacted_tree, url_secrets
from admiss.source import Source, Span


@pytest.mark.parametrize(("text", "shown"), [
    ("cannot connect to https://user:pa55@api.example/v1", "cannot connect to https://***@api.example/v1"),
    ("postgres://svc:pw@db:5432/x and redis://:tok@cache", "postgres://***@db:5432/x and redis://***@cache"),
    ("http://api.example/v1?user=a@b", "http://api.example/v1?user=a@b"),  # no user-info: untouched
    ("mail me at someone@example.org", "mail me at someone@example.org"),
])
def test_url_user_info_is_masked(text, shown):
    assert redact(text) == shown


def test_key_values_are_masked_longest_first():
    assert redact("keys sk-abcdefgh and sk-abcdefgh-longer", ["sk-abcdefgh", "sk-abcdefgh-longer"]) == "keys *** and ***"


def test_a_tuple_of_secrets_is_masked_longest_first_at_every_call():
    # A tuple's order is worked out once and kept (redact._longest_first): the kept order
    # must be longest first whatever order the tuple gives, call after call.
    secrets = ("sk-abcdefgh", "sk-abcdefgh-longer", "sk-abcdefgh-longest")
    for _ in range(2):
        assert redact("sk-abcdefgh-longest, sk-abcdefgh-longer, sk-abcdefgh", secrets) == "***, ***, ***"
        assert redact("a sk-abcdefgh-longer b", secrets, same_length=True) == "a " + "*" * 18 + " b"


def test_only_set_and_long_enough_variables_are_keys():
    environ = {"A": "sk-0123456789", "B": "short", "C": ""}
    assert key_values(["A", "B", "C", "UNSET", None], environ) == ("sk-0123456789",)


def test_a_quoted_source_line_keeps_its_columns():
    source = Source("admiss.toml", 'base_url = "ftp://admin:pw@host/v1"\n')
    rendered = Diagnostic("E001", "bad base_url 'ftp://admin:pw@host/v1'", Span.point(1, 12, 24),
                          file="admiss.toml").render(source)
    assert "admin:pw" not in rendered
    line, caret = rendered.splitlines()[1:3]
    assert line.endswith('base_url = "ftp://********@host/v1"')
    # The caret still runs under the whole quoted URL, from its opening quote to its closing one.
    assert (caret.index("^"), caret.rindex("^")) == (line.index('"'), line.rindex('"'))


def test_a_secret_across_the_cut_is_masked_before_the_cut():
    key = "sk-abcdefghijkl"
    assert clipped("x" * 195 + key + " more", 200, [key]) == "x" * 195 + "*** m..."


def test_url_secrets_are_every_form_a_server_may_echo():
    forms = set(url_secrets(["http://svc:pa%40ss-word@host/v1", "http://host/v1", "http://a:b@h/v1"]))
    assert forms == {"svc:pa%40ss-word", "svc:pa@ss-word", "pa@ss-word", "c3ZjOnBhQHNzLXdvcmQ="}


@pytest.mark.parametrize("key", ["sk-plain-0123456789", 'sk-"quoted"-0123456789'])  # looked for in JSON, or walked
def test_every_string_of_a_tree_is_redacted(key):
    tree = {"a": [f"x {key} y", 5, None, {"b": "http://u:p@h/v"}]}
    assert redacted_tree(tree, [key]) == {"a": ["x *** y", 5, None, {"b": "http://***@h/v"}]}
    clean = {"a": ["nothing to mask", 1.5]}
    assert redacted_tree(clean, [key]) == clean
