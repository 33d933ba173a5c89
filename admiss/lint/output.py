"""``admiss lint`` output: text (ruff-style), JSON, SARIF 2.1.0, GitHub workflow commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs

from admiss import __version__
from admiss.errors import Diagnostic
from admiss.lint.codes import ALL_RULES, DOCS_URL
from admiss.source import Source

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@attrs.frozen
class FileResult:
    source: Source
    diagnostics: tuple[Diagnostic, ...]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def text(results: list[FileResult], unreadable: int = 0) -> str:
    """Each diagnostic as ``Diagnostic.render`` prints it, a blank line apart, then a summary
    that counts the ``unreadable`` files too, so it never reads as if an error above it
    (``E001 no such file``) had not happened."""
    blocks = [d.render(r.source) for r in results for d in r.diagnostics]
    found = [d for r in results for d in r.diagnostics]
    not_read = f"; {_plural(unreadable, 'file')} could not be read" if unreadable else ""
    if not found:
        return f"No problems in {_plural(len(results), 'file')}{' read' if unreadable else ''}{not_read}.\n"
    errors = sum(d.severity == "error" for d in found)
    files = sum(bool(r.diagnostics) for r in results)
    summary = (f"Found {_plural(len(found), 'problem')} ({_plural(errors, 'error')}, "
               f"{_plural(len(found) - errors, 'warning')}) in {_plural(files, 'file')}{not_read}.")
    return "\n\n".join(blocks) + "\n\n" + summary + "\n"


def json_text(results: list[FileResult]) -> str:
    """A JSON array of every diagnostic (``Diagnostic.to_dict``), files in the order given."""
    return json.dumps([d.to_dict() for r in results for d in r.diagnostics], indent=2, ensure_ascii=False) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(results: list[FileResult]) -> str:
    """One ``::error`` or ``::warning`` workflow command per diagnostic, for GitHub Actions."""
    lines = []
    for diagnostic in (d for r in results for d in r.diagnostics):
        span = diagnostic.span
        props = [f"file={_escape_property(diagnostic.file or '')}"]
        if span.line > 0:
            props += [f"line={span.line}", f"col={span.column}", f"endLine={span.end_line}",
                      f"endColumn={span.end_column}"]
        props.append(f"title={diagnostic.code}")
        lines.append(f"::{diagnostic.severity} {','.join(props)}::"
                     f"{_escape_data(diagnostic.code + ' ' + diagnostic.message)}")
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------- SARIF


def _sarif_rules(codes_found: list[str]) -> list[dict]:
    rules = [{
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "helpUri": DOCS_URL + rule.page,
        "defaultConfiguration": {"level": rule.severity},
    } for rule in ALL_RULES]
    known = {rule.code for rule in ALL_RULES}
    rules += [{
        "id": code,
        "shortDescription": {"text": "The rubric does not compile."},
        "helpUri": DOCS_URL + "language.md#compile-errors",
        "defaultConfiguration": {"level": "error"},
    } for code in sorted(set(codes_found) - known)]
    return rules


def _uri(name: str) -> str:
    """The file's path relative to the working folder, with forward slashes."""
    path = Path(name)
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive on Windows: no relative path exists
        return path.resolve().as_uri()


def _sarif_result(diagnostic: Diagnostic, index: dict[str, int]) -> dict:
    location: dict = {"artifactLocation": {"uri": _uri(diagnostic.file or "")}}
    span = diagnostic.span
    if span.line > 0:
        location["region"] = {"startLine": span.line, "startColumn": span.column,
                              "endLine": span.end_line, "endColumn": span.end_column}
    message = diagnostic.message + (f" (hint: {diagnostic.hint})" if diagnostic.hint else "")
    return {
        "ruleId": diagnostic.code,
        "ruleIndex": index[diagnostic.code],
        "level": diagnostic.severity,
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }


def sarif(results: list[FileResult]) -> str:
    """A SARIF 2.1.0 log with one run, as GitHub code scanning reads it."""
    found = [d for r in results for d in r.diagnostics]
    rules = _sarif_rules([d.code for d in found])
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "admiss", "version": __version__, "informationUri": DOCS_URL + "lint/index.md",
                                "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": [_sarif_result(d, index) for d in found],
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


FORMATS = {"text": text, "json": json_text, "sarif": sarif, "github": github}
