"""The VS Code extension's manifest points at the grammar and the server that exist."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"


def test_the_manifest_contributes_the_grammar_and_language_for_rubric_files():
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    language, = manifest["contributes"]["languages"]
    grammar, = manifest["contributes"]["grammars"]
    assert language["extensions"] == [".rubric"] and grammar["language"] == language["id"]
    path = (EXTENSION / grammar["path"]).resolve()
    assert path == (EXTENSION.parent / "rubric.tmLanguage.json").resolve()
    assert json.loads(path.read_text(encoding="utf-8"))["scopeName"] == grammar["scopeName"]
    configuration = json.loads((EXTENSION / language["configuration"]).read_text(encoding="utf-8"))
    assert configuration["comments"]["lineComment"] == "#"
    assert manifest["contributes"]["configuration"]["properties"]["admiss.server.command"]["default"] == ["admiss", "lsp"]
    assert "vscode-languageclient" in manifest["dependencies"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (.ci/run installs it)")
def test_the_extension_script_is_valid_javascript():
    subprocess.run(["node", "--check", str(EXTENSION / "extension.js")], check=True, timeout=60)
