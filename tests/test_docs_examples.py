"""The examples in docs/ are run, so the docs cannot drift from the code.

Conventions in the Markdown files (fence info strings):

- ```rubric            must compile.
- ```rubric error E101 must fail with exactly the listed codes; when the paragraph above it
                        quotes a `t.rubric:...` line, that is the first diagnostic's first line.
- ```<lang> file=NAME  is also written to NAME in the page's scratch folder, in page order.
- ```console           lines starting with `$ ` are run by bash in that folder (with the
                        `admiss` under test first on PATH, stderr merged into stdout); the
                        block must equal the transcript.
- ```json compiled-from=NAME  equals (as JSON) what `admiss compile` writes for file NAME.
- ```python            blocks run in order, one namespace per page, in that page's folder;
                        ``requires=MODULE`` on any of them skips the page where MODULE is not
                        installed (an integration's package).

Pages are docs/*.md and docs/integrations/*.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import admiss

DOCS = Path(__file__).resolve().parent.parent / "docs"
# The pages whose examples run: docs/ and its integrations/ (docs/lint/ has its own test).
PAGES_RUN = sorted([*DOCS.glob("*.md"), *DOCS.glob("integrations/*.md")])
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)


class Block:
    def __init__(self, page: Path, info: str, body: str, start: int, before: str):
        words = info.split()
        self.page, self.body, self.before = page, body, before
        self.lang = words[0] if words else ""
        self.words = words[1:]
        self.line = start
        self.file = next((w[5:] for w in self.words if w.startswith("file=")), None)

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n\n", 1)[-1]
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, match.group(1).strip(), match.group(2), line, before))
    return found


def all_blocks(lang: str) -> list[Block]:
    return [b for page in PAGES_RUN for b in blocks(page) if b.lang == lang]


def _ids(items: list[Block]) -> list[str]:
    return [b.id for b in items]


RUBRICS = [b for b in all_blocks("rubric") if "error" not in b.words]
ERRORS = [b for b in all_blocks("rubric") if "error" in b.words]


def test_the_docs_have_examples():
    # Guards the extraction itself: a broken FENCE pattern must not pass vacuously.
    assert len(RUBRICS) >= 8 and len(ERRORS) >= 18
    documented = {f"E{n}" for n in [*range(100, 119), *range(130, 139)]}
    assert {code for b in ERRORS for code in b.words if code.startswith("E")} == documented
    assert any(b.lang == "python" for b in blocks(DOCS / "api.md"))
    assert COMPILED


@pytest.mark.parametrize("block", RUBRICS, ids=_ids(RUBRICS))
def test_rubric_examples_compile(block):
    admiss.compile_source(block.body, block.file or "t.rubric")


@pytest.mark.parametrize("block", ERRORS, ids=_ids(ERRORS))
def test_error_examples_fail_with_their_codes(block):
    expected = sorted(w for w in block.words if re.fullmatch(r"E\d{3}", w))
    assert expected, "an error example must list its codes"
    with pytest.raises(admiss.AdmissError) as caught:
        admiss.compile_source(block.body, "t.rubric")
    diagnostics = caught.value.diagnostics
    assert sorted({d.code for d in diagnostics}) == sorted(set(expected))
    quoted = re.search(r"`(t\.rubric:[^`]*)`", block.before)
    if quoted:
        assert quoted.group(1) == caught.value.render().splitlines()[0]


# ------------------------------------------------------------------ pages run as scripts


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "80"
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def transcript(block: Block, folder: Path) -> str:
    """Run the block's `$ ` lines in one bash session; return the transcript it should show."""
    # One stream, unbuffered, so the transcript reads as it would in a terminal.
    script = ["exec 2>&1"]
    for line in block.body.splitlines():
        if line.startswith("$ "):
            command = line[2:]
            # Echo the command without losing the previous one's exit status (for `echo $?`).
            script.append(f"__status=$?; printf '%s\\n' {shlex.quote(line)}; (exit $__status)")
            script.append(command)
    result = subprocess.run(["bash", "-c", "\n".join(script)], cwd=folder, env=_environment(),
                            capture_output=True, text=True, timeout=120)
    return result.stdout


def run_page(page: Path, folder: Path) -> list[tuple[Block, str]]:
    """Write the page's file= blocks and run its console blocks; (block, actual) for each run."""
    runs = []
    for block in blocks(page):
        if block.file:
            target = folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
        if block.lang == "console":
            runs.append((block, transcript(block, folder)))
    return runs


# Pages whose console examples talk to a service: a test of their own runs them against a
# loopback stand-in (tests/otel/test_otel_docs.py points otel.md's at an OTLP receiver).
OWN_RUNNER = {"otel.md"}
PAGES = sorted(p for p in PAGES_RUN if p.name not in OWN_RUNNER and any(b.lang == "console" for b in blocks(p)))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_console_examples_print_what_the_docs_show(page, tmp_path):
    runs = run_page(page, tmp_path)
    assert runs
    for block, actual in runs:
        assert actual == block.body, f"{block.id}: the transcript differs"


PYTHON_PAGES = sorted(p for p in PAGES_RUN if any(b.lang == "python" for b in blocks(p)))


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[p.name for p in PYTHON_PAGES])
def test_python_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    page_blocks = blocks(page)
    for module in {w[len("requires="):] for b in page_blocks for w in b.words if w.startswith("requires=")}:
        pytest.importorskip(module, reason=f"{page.name} needs {module}")
    for block in page_blocks:
        if block.file:
            (tmp_path / block.file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / block.file).write_text(block.body, encoding="utf-8")
    for block in page_blocks:
        if block.lang == "python":
            exec(compile(block.body, block.id, "exec"), namespace)


COMPILED = [b for b in all_blocks("json") if any(w.startswith("compiled-from=") for w in b.words)]


@pytest.mark.parametrize("block", COMPILED, ids=_ids(COMPILED))
def test_ir_examples_are_what_compile_writes(block):
    source_name = next(w for w in block.words if w.startswith("compiled-from="))[len("compiled-from="):]
    [source] = [b for b in blocks(block.page) if b.file == source_name]
    written = admiss.compile_source(source.body, source_name).to_ir_json()
    assert json.loads(block.body) == json.loads(written)


def test_the_index_links_every_page():
    # A page the index leaves out is one a reader starting there never finds.
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w/.-]+\.md)(?:#[\w-]*)?\)", index))
    pages = {str(p.relative_to(DOCS)) for p in PAGES_RUN} - {"index.md"}
    assert len(pages) > 10
    assert not pages - linked, f"docs/index.md does not link {sorted(pages - linked)}"


def test_the_trace_option_names_every_format():
    # cli.md's --trace row named 5 of the 14 formats: a reader took langfuse or inspect for unread.
    from admiss.traces.read import FORMAT_NAMES

    row = next(line for line in (DOCS / "cli.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `--trace FORMAT` |"))
    named = re.findall(r"`(\w+)`", row.split("|")[2])
    assert named == list(FORMAT_NAMES), row


if __name__ == "__main__":
    # `python tests/test_docs_examples.py docs/cli.md` prints a page's real transcripts,
    # to paste into the page after reading them.
    import tempfile

    for name in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as scratch:
            for block, actual in run_page(Path(name), Path(scratch)):
                print(f"--- {block.id}\n{actual}", end="")
