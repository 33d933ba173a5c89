"""``schema FILE "x.json"``: the output, parsed as JSON, must be valid under a JSON Schema.

The full standard through the ``jsonschema`` library: the draft comes from the schema's
``$schema`` (Draft 2020-12 when absent) and ``format`` is asserted where the library can
check it. The schema file is read, checked and compiled once, when the gate is built; a
missing or broken schema is an InputError then, not an abstain on every candidate.
``$ref`` is resolved within the schema file only: nothing is fetched.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import referencing.exceptions
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from admiss import ir
from admiss.errors import Diagnostic, InputError
from admiss.gates.base import ABSTAIN, CANDIDATE_FAULT, FAIL, GATE_FAULT, PASS, Candidate, GateCheck, GateContext, GateResult
from admiss.gates.json_valid import NotJSON, parse_output
from admiss.source import Source, Span

DEFAULT_DRAFT = jsonschema.Draft202012Validator


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    validator = load_validator(gate, ctx)
    return GateCheck(kind=gate.kind, cheap=True, run=functools.partial(check, validator))


def check(validator: Validator, candidate: Candidate) -> GateResult:
    try:
        instance = parse_output(candidate.output)
    except NotJSON as exc:
        return GateResult(FAIL, reason=str(exc))
    try:
        errors = list(validator.iter_errors(instance))
    except referencing.exceptions.Unresolvable as exc:
        return GateResult(ABSTAIN, reason=f"the schema has a $ref that cannot be resolved: {exc}", fault=GATE_FAULT)
    except RecursionError:
        # The output parsed, but is nested too deeply for the validator to walk.
        return GateResult(ABSTAIN, reason="output is nested too deeply to validate", fault=CANDIDATE_FAULT)
    if not errors:
        return GateResult(PASS)
    error = best_match(errors)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return GateResult(FAIL, reason=f"{error.json_path}: {error.message}{more}")


def load_validator(gate: ir.Gate, ctx: GateContext) -> Validator:
    """The compiled validator for the gate's schema file; InputError when it cannot be."""
    if not gate.file:
        raise _rubric_error(gate, ctx, "the schema gate needs FILE \"schema.json\"")
    path = ctx.rubric_dir / gate.file
    schema = _read_schema(path, gate, ctx)
    validator_class = _draft_of(schema, path)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise _schema_error(path, f"not a valid JSON Schema: {exc.json_path}: {exc.message}") from None
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def _read_schema(path: Path, gate: ir.Gate, ctx: GateContext) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _rubric_error(gate, ctx, f"schema file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _rubric_error(gate, ctx, f"cannot read schema file {path}: {exc}") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        span = Span.point(exc.lineno, exc.colno)
        diagnostic = Diagnostic("E001", f"schema file is not JSON: {exc.msg}", span=span, file=str(path))
        raise InputError([diagnostic], Source(str(path), text)) from None
    if not isinstance(schema, (dict, bool)):
        raise _schema_error(path, f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    return schema


def _draft_of(schema: Any, path: Path) -> type[Validator]:
    if not isinstance(schema, dict) or "$schema" not in schema:
        return DEFAULT_DRAFT
    found = jsonschema.validators.validator_for(schema, default=None)
    if found is None:
        raise _schema_error(
            path,
            f"unknown $schema {schema['$schema']!r}",
            hint="name a JSON Schema draft, e.g. https://json-schema.org/draft/2020-12/schema",
        )
    return found


def _schema_error(path: Path, message: str, hint: str | None = None) -> InputError:
    return InputError([Diagnostic("E001", message, hint=hint, file=str(path))])


def _rubric_error(gate: ir.Gate, ctx: GateContext, message: str) -> InputError:
    return InputError([Diagnostic("E001", message, span=gate.span_of("file"), file=ctx.rubric_file)])
