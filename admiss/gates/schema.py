"""``schema FILE "x.json"``: the output, parsed as JSON, must be valid under a JSON Schema.

The full standard through the ``jsonschema`` library: the draft comes from the schema's
``$schema`` (Draft 2020-12 when absent) and ``format`` is asserted where the library can
check it. The schema file is read, checked and compiled once, when the gate is built; a
missing or broken schema is an InputError then, not an abstain on every candidate.

Nothing is fetched that the rubric did not name. A ``$ref`` may point inside the schema (a
JSON pointer, an ``$anchor``, an embedded ``$id``), to a draft's metaschema (which the
library ships), or, by a relative path, to a JSON file in the rubric's folder (or below it),
which is read when the gate is built. Anything else (``http://``, ``file://``, an absolute
path, ``..`` out of the folder, a symlink out of it, a device) is an InputError (E160) at
the rubric's FILE string, and the registry the validator gets can retrieve nothing at run
time.

``pattern`` and ``patternProperties`` are matched under a time bound (admiss.gates.patterns),
so a backtracking pattern cannot hang the gate on text the candidate chose; a pattern the
bounded engine cannot compile is an InputError (E162) at the rubric's FILE string.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urldefrag, urljoin, urlsplit

import attrs
import jsonschema
import referencing.exceptions
import referencing.jsonschema
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Registry, Resource

from admiss import ir, limits
from admiss.errors import Diagnostic, InputError
from admiss.gates.base import (ABSTAIN, CANDIDATE_FAULT, FAIL, GATE_FAULT, PASS, Candidate, GateCheck, GateContext,
                               GateResult, untrusted)
from admiss.gates.json_valid import NotJSON, call_arguments, parse_output
from admiss.gates.patterns import PatternTimeout, bounded_keywords, compile_problem, pattern_budget
from admiss.jsonio import nested_deeper_than
from admiss.source import Source, Span
from admiss.untrusted import UntrustedInput

DEFAULT_DRAFT = jsonschema.Draft202012Validator


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    validator = load_validator(gate, ctx)
    if gate.tools:
        return GateCheck(kind=gate.kind, cheap=True, run=functools.partial(check_calls, validator, gate.tools[0]))
    return GateCheck(kind=gate.kind, cheap=True, run=functools.partial(check, validator))


def check_calls(validator: Validator, tool: str, candidate: Candidate) -> GateResult:
    """``schema TOOL "name"``: every proposed call of that tool has arguments valid under the
    schema (a candidate that does not call it passes; which tools may be called at all is the
    tool_calls gate's question)."""
    calls = [call for call in candidate.tool_calls if call["function"]["name"] == tool]
    for call in calls:
        try:
            instance = call_arguments(call)
        except NotJSON as exc:
            return GateResult(FAIL, reason=str(exc))
        result = _validated(validator, instance, "the arguments")
        if result.verdict != PASS:
            return attrs.evolve(result, reason=f"tool call {call['id']} ({tool}): {result.reason}")
    return GateResult(PASS, reason=f"{len(calls)} call(s) of {tool} checked" if calls else f"no call of {tool}")


def check(validator: Validator, candidate: Candidate) -> GateResult:
    try:
        instance = parse_output(candidate.output)
    except NotJSON as exc:
        return GateResult(FAIL, reason=str(exc))
    return _validated(validator, instance, "the output")


def _validated(validator: Validator, instance: Any, what: str) -> GateResult:
    if nested_deeper_than(instance, limits.MAX_VALIDATED_DEPTH):
        return _too_deep(what)
    try:
        with pattern_budget(), untrusted("validating the output", gate_side=(referencing.exceptions.Unresolvable,)):
            errors = list(validator.iter_errors(instance))
            if not errors:
                return GateResult(PASS)
            error = best_match(errors)
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return GateResult(FAIL, reason=f"{error.json_path}: {error.message}{more}")
    except PatternTimeout as exc:
        reason = f"matching the schema's pattern {exc.pattern!r} against {what} ran past its time bound"
        return GateResult(ABSTAIN, reason=reason, fault=CANDIDATE_FAULT)
    except referencing.exceptions.Unresolvable as exc:
        return GateResult(ABSTAIN, reason=f"the schema has a $ref that cannot be resolved: {exc}", fault=GATE_FAULT)
    except UntrustedInput as exc:
        # The output parsed, but the validator cannot walk it (nested too deeply) or compare
        # it (a long integer against a float's multipleOf overflows): the output's doing.
        if isinstance(exc.__cause__, RecursionError):  # a value within the bound, under a schema that recurses
            return _too_deep(what)
        return GateResult(ABSTAIN, reason=f"{what} cannot be validated: {exc}", fault=CANDIDATE_FAULT)


def _too_deep(what: str) -> GateResult:
    return GateResult(ABSTAIN, reason=f"{what} is nested too deeply to validate", fault=CANDIDATE_FAULT)


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
    except RecursionError:
        raise _schema_error(path, "schema is nested too deeply to check against its metaschema") from None
    refs = _LocalRefs(gate, ctx)
    registry = refs.registry(schema, path, _spec_of(schema))
    property_patterns = _patterns_in([schema, *refs.loaded.values()], gate, ctx)
    keywords = bounded_keywords(validator_class.VALIDATORS, property_patterns)
    bounded = jsonschema.validators.extend(validator_class, keywords)
    return bounded(schema, registry=registry, format_checker=validator_class.FORMAT_CHECKER)


def _patterns_in(documents: list[Any], gate: ir.Gate, ctx: GateContext) -> list[str]:
    """Every patternProperties pattern in ``documents``; E162 for any pattern that cannot run."""
    patterns, property_patterns = [], []
    for document in documents:
        for node, _ in _subschemas(document, ""):
            if isinstance(node.get("pattern"), str):
                patterns.append(node["pattern"])
            if isinstance(node.get("patternProperties"), dict):
                property_patterns.extend(node["patternProperties"])
    for pattern in patterns + property_patterns:
        problem = compile_problem(pattern)
        if problem is not None:
            message = f"schema pattern {pattern!r} cannot be matched under a time bound: {problem}"
            raise InputError([Diagnostic("E162", message, span=gate.value_span_of("file"), file=ctx.rubric_file)])
    return property_patterns


# Keywords whose values are data, not subschemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def _never_retrieve(uri: str) -> Resource:
    # Every reference was checked and its file loaded when the gate was built.
    raise referencing.exceptions.NoSuchResource(ref=uri)


class _LocalRefs:
    """The files a schema's references name beside the rubric, loaded; E160 for anything else."""

    def __init__(self, gate: ir.Gate, ctx: GateContext):
        self.gate = gate
        self.ctx = ctx
        self.folder = ctx.rubric_dir.resolve()
        self.loaded: dict[str, Any] = {}

    def registry(self, schema: Any, path: Path, spec: referencing.Specification) -> Registry:
        """A registry holding every file ``schema`` refers to, transitively, and able to fetch nothing."""
        pending = [(schema, path, _id_of(schema) or "")]
        known: set[str] = set()
        while pending:
            document, where, base = pending.pop()
            try:
                known |= {base, *_ids_in(document, base)}
                self._load_refs(document, where, base, known, pending)
            except (ValueError, RuntimeError, OSError) as exc:  # a malformed URL; a NUL, a loop, a name too long
                raise self._refused(where, f"a $ref or $id is not an address admiss can read ({_short(exc)})") from None
        resources = [(url, Resource.from_contents(c, default_specification=spec)) for url, c in self.loaded.items()]
        return Registry(retrieve=_never_retrieve).with_resources(resources)

    def _load_refs(self, document: Any, where: Path, base: str, known: set[str], pending: list) -> None:
        for written, target in _refs_in(document, base):
            url = urldefrag(target)[0]
            if url in known or url in self.loaded or url in METASCHEMAS:
                continue
            file = self._beside_rubric(written, where)
            self.loaded[url] = contents = _read_schema(file, self.gate, self.ctx)
            pending.append((contents, file, url))

    def _beside_rubric(self, written: str, where: Path) -> Path:
        reference = urldefrag(written)[0]
        parts = urlsplit(reference)
        if parts.scheme or parts.netloc or reference.startswith("/"):
            raise self._unresolved(written, where, "it names an address, not a file beside the rubric")
        file = (where.parent / reference).resolve()
        if not file.is_relative_to(self.folder):
            raise self._unresolved(written, where, f"{file} is outside the rubric's folder {self.folder}")
        if file.exists() and not file.is_file():
            raise self._unresolved(written, where, f"{file} is not a regular file")
        return file

    def _unresolved(self, written: str, where: Path, why: str) -> InputError:
        return self._refused(where, f"$ref {written!r} is not resolved: {why}")

    def _refused(self, where: Path, problem: str) -> InputError:
        message = f"schema {where.name}: {problem}"
        hint = ("a $ref may point inside the schema, or by a relative path to a JSON file in the rubric's "
                "folder; nothing is fetched from the network or read from elsewhere")
        return InputError([Diagnostic("E160", message, span=self.gate.value_span_of("file"), hint=hint,
                                      file=self.ctx.rubric_file)])


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


def _id_of(document: Any) -> str | None:
    ident = document.get("$id", document.get("id")) if isinstance(document, dict) else None
    return urldefrag(ident)[0] if isinstance(ident, str) else None


def _subschemas(document: Any, base: str) -> Iterator[tuple[Any, str]]:
    """Every object in ``document`` with the base URI its references resolve against."""
    stack = [(document, base)]
    while stack:
        node, base = stack.pop()
        if isinstance(node, list):
            stack.extend((item, base) for item in node)
        elif isinstance(node, dict):
            ident = _id_of(node)
            base = urljoin(base, ident) if ident else base
            yield node, base
            stack.extend((value, base) for key, value in node.items() if key not in _DATA_KEYWORDS)


def _ids_in(document: Any, base: str) -> Iterator[str]:
    return (base for node, base in _subschemas(document, base) if _id_of(node))


def _refs_in(document: Any, base: str) -> Iterator[tuple[str, str]]:
    """(the reference as written, the reference resolved) for each reference in ``document``."""
    for node, base in _subschemas(document, base):
        for key in _REF_KEYWORDS:
            if isinstance(node.get(key), str):
                yield node[key], urljoin(base, node[key])


def _spec_of(schema: Any) -> referencing.Specification:
    """The root schema's draft, which a referenced file without ``$schema`` is read in."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    return referencing.jsonschema.specification_with(dialect or "", default=referencing.jsonschema.DRAFT202012)


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
    except RecursionError:
        raise _schema_error(path, "schema file is nested too deeply to read") from None
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
